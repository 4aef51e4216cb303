"""Template pages: jinja2 files in ``templates/``, the analogue of ML Server Pages (SMLserver §2).

SMLserver's ``.msp`` files embed code in HTML, the way PHP and ASP do; pyweb's are jinja2
templates. The choice of place: a site's templates live in its ``templates/`` folder, and
``templates/NAME.html`` is served at ``/NAME`` (unless a script or service has that URL);
a template whose name starts with ``_`` is private (a layout, a partial, an error page:
``templates/_404.html``) and never served. A
separate folder keeps them apart from static ``.html`` files, which are sent with
``sendfile`` untouched, and the folder itself is never served as static files, so template
source stays private.

Every template sees ``conn`` (the request, :mod:`pyweb.app.conn`), ``form`` (its form
variables), ``files``, ``csrf_field()`` (the hidden field a POST form must carry,
:mod:`pyweb.app.csrf`) and ``static_url(path)`` (a static file's content-hashed address,
:mod:`pyweb.app.staticurl`). A script can render one too: ``conn.return_template("list.html",
rows=rows)``. Two settings matter:

* ``autoescape=True``: ``{{ name }}`` is HTML-escaped, so user input cannot inject markup;
  a Quot, an HTML node or ``safe(...)`` passes through (the ``__html__`` protocol).
* ``StrictUndefined``: a misspelt name is an error naming it, not a silent empty string.

Templates are compiled once and cached by jinja2; in development mode jinja2 checks the
file's modification time on each use and recompiles a changed one.
"""

from __future__ import annotations

import os
from typing import Any

import jinja2

__all__ = ["Templates"]


class Templates:
    """The jinja2 templates of one site (``ROOT/templates``)."""

    def __init__(self, directory: str, *, dev: bool = False) -> None:
        self.directory = directory
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(directory),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            auto_reload=dev,
            keep_trailing_newline=True,
        )

    def page_name(self, url_name: str) -> str | None:
        """``"hello"`` → ``"hello.html"`` if ``templates/hello.html`` exists. Private
        templates, whose name (or a folder on the way) starts with ``_`` (layouts, partials,
        error pages), are never pages: ``/_layout`` is a 404."""
        if any(part.startswith("_") for part in url_name.split("/")):
            return None
        candidate = url_name + ".html"
        if os.path.isfile(os.path.join(self.directory, candidate)):
            return candidate
        return None

    def error_template(self, status: int) -> str | None:
        """The site's page for an error: ``_404.html`` for 404, else ``_error.html``."""
        for candidate in (f"_{status}.html", "_error.html"):
            if os.path.isfile(os.path.join(self.directory, candidate)):
                return candidate
        return None

    def render(self, name: str, conn: Any, context: dict[str, Any]) -> str:
        template = self.env.get_template(name)
        from .csrf import csrf_field
        from .staticurl import static_url

        return template.render(
            conn=conn,
            form=conn.form,
            files=conn.files,
            csrf_field=lambda: csrf_field(conn),
            static_url=lambda path: static_url(path, conn),
            **context,
        )

    def check(self) -> list[tuple[str, int, str]]:
        """``(path, line, message)`` for every template that does not parse."""
        problems = []
        for name in self.env.list_templates():
            path = os.path.join(self.directory, name)
            try:
                with open(path, encoding="utf-8") as f:
                    self.env.parse(f.read(), name, path)
            except jinja2.TemplateSyntaxError as err:
                problems.append((path, err.lineno or 1, f"TemplateSyntaxError: {err.message}"))
            except UnicodeDecodeError as err:
                problems.append((path, 1, f"not UTF-8 text: {err}"))
        return problems
