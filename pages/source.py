# "View source": the script behind a page of this site, highlighted. /source?file=guess.py
#
# Only the site's own page scripts and service modules (NAME.py in this folder) and its
# template pages (templates/NAME.html) can be shown. The name is checked against a strict
# pattern before any file is opened, so no path can lead elsewhere: not to a hidden file,
# not to the library's private _modules, the database in data/ or the schema, and not out
# of the site.
import os
import re

from pyweb import safe
from pyweb.forms import FormError, get_string
from pyweb.html import CODE, PRE, A, P

import _highlight
from _layout import page

SITE = os.path.dirname(os.path.abspath(__file__))
ALLOWED = re.compile(r"(?:templates/)?[a-z][a-z0-9_]*\.(?:py|html)")

name = get_string("file", max_length=80)
path = os.path.join(SITE, *name.split("/"))
shown = (
    ALLOWED.fullmatch(name)
    and name.endswith(".html") == name.startswith("templates/")
    and os.path.isfile(path)
    and not os.path.islink(path)
)
if not shown:
    raise FormError("file", name, "the name of a page of this site, such as guess.py")

with open(path, encoding="utf-8") as f:
    text = f.read()
url = "/" + name.removeprefix("templates/").removesuffix(".py").removesuffix(".html")
if re.search(r"^@service\b", text, re.MULTILINE):
    # A service module has no URL of its own: its functions are bound to theirs.
    intro = P(CODE(f"pages/{name}"), " is a service module: its functions answer their own URLs.")
else:
    if name == "source.py":  # this page needs a file to show: its own source, say
        url = "/source?file=source.py"
    intro = P("The page ", A(url, href=url), " is made by ", CODE(f"pages/{name}"), ":")
conn.return_(
    page(
        f"Source of {name}",
        intro,
        PRE(safe(_highlight.highlight(text)), class_="source"),
    )
)
