"""The example site's library: one page layout shared by the scripts (SMLserver §2.1).

A module whose name starts with ``_`` is *library* code: scripts import it, it is
initialised once per process (not per request), and it is never served as a page.
"""

from pyweb.html import BODY, H1, HEAD, LINK, META, TITLE, A, I, P, document

SERVED_BY = P(I("Served by ", A("pyweb", href="/"), ", after SMLserver and Hop."))


def page(title, *body):
    """A whole HTML document with the site's style sheet."""
    return document(
        HEAD(META(charset="utf-8"), TITLE(title), LINK(rel="stylesheet", href="/style.css")),
        BODY(H1(title), *body, SERVED_BY),
        lang="en",
    )
