"""Error pages: the site's own templates (``templates/_404.html``, ``_error.html``) or
pyweb's styled page, with the traceback in development mode (Hop §2.4's "Response" stage
for what went wrong).

Every refusal of the request pipeline ends here: a 404, a 405 with ``Allow``, the form's
400, the CSRF check's 403, a page's 500. The server calls :meth:`ErrorPages.error_page` for
the errors it answers itself too (400, 408, 413, 414, 431, 505).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from markupsafe import Markup

from pyweb import forms
from pyweb.handler import Context
from pyweb.protocol.errorpage import SENTENCES, error_response, reason
from pyweb.protocol.response import Response

from .apierrors import json_error, wants_json
from .conn import Conn, RequestError
from .loader import Loader
from .services import JSONFieldErrors

__all__ = ["ErrorPages"]

_site_log = logging.getLogger("pyweb.site")


class ErrorPages(Loader):
    """The error pages of a loaded site."""

    def error_page(
        self,
        status: int,
        *,
        detail: str = "",
        exc: BaseException | None = None,
        offending: bytes = b"",
        sentence: str | None = None,
        body_html: str = "",
        public_detail: str = "",
        title: str | None = None,
        request: Any = None,
        as_json: bool = False,
    ) -> Response:
        """The page for an error ``status``: the site's own template if it has one
        (``templates/_404.html``, ..., or ``templates/_error.html`` for any status), else
        pyweb's styled page. In development mode a page with a traceback (``exc``) is always
        pyweb's, so the traceback shows. ``public_detail`` is detail fit for production (the
        list of bad form fields); ``detail`` is shown in development mode only. The server
        calls this too, for the errors it answers itself (400, 408, 413, 414, 431, 505).

        An API client gets the error as JSON instead: ``as_json`` (the server decided), or
        ``request`` given and :func:`~pyweb.app.apierrors.wants_json` of it."""
        if as_json or (request is not None and wants_json(request)):
            return error_response(
                status, dev=self.dev, detail=detail or public_detail, sentence=sentence,
                as_json=True,
            )  # fmt: skip
        if self.templates is not None and not (self.dev and exc is not None):
            override = self._override(
                status, detail if self.dev else public_detail, sentence, title, body_html
            )
            if override is not None:
                return override
        return error_response(
            status,
            dev=self.dev,
            detail=detail,
            exc=exc,
            offending=offending,
            sentence=sentence,
            own=self._own,
            display=self.display,
            body_html=body_html,
            title=title,
        )

    def _form_errors_page(self, errors: list[Any]) -> Response:
        """The ``wrap_fail`` page: one 400 listing every bad form variable (in production
        too: the values are the visitor's own, and the list is what they need to fix)."""
        bad = forms.FormErrors(list(errors))
        listing = bad.describe()
        return self.error_page(
            400,
            sentence=bad.intro(),
            title="Bad form input",
            body_html=bad.table_html(),
            detail=listing,
            public_detail=listing,
        )

    def _own(self, filename: str) -> bool:
        """A file of the site itself (its frames come first in a traceback)."""
        return filename.startswith(self.root + os.sep)

    def _override(
        self, status: int, detail: str, sentence: str | None, title: str | None, body_html: str
    ) -> Response | None:
        templates = self.templates
        assert templates is not None
        name = templates.error_template(status)
        if name is None:
            return None
        title = title or reason(status)
        try:
            text = templates.env.get_template(name).render(
                status=status,
                title=title,
                detail=detail or sentence or SENTENCES.get(status, ""),
                sentence=sentence or SENTENCES.get(status, ""),
                dev=self.dev,
                details_html=Markup(body_html),
            )
        except Exception as exc:  # a broken error template must not hide the error
            _site_log.warning("templates/%s failed, pyweb's page used: %s", name, exc)
            return None
        return Response(
            status,
            [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store")],
            text.encode("utf-8"),
        )

    def _not_found(self, path: str, request: Any = None) -> Response:
        """404 (JSON for an API client, when the request is given)."""
        detail = f"no page, service, template or file for {path}"
        if self.dev and self.problems:
            detail += "; the site has errors: " + "; ".join(str(p) for p in self.problems)
        return self.error_page(404, detail=detail, request=request)

    def not_allowed(self, method: str, allow: str, request: Any = None) -> Response:
        """405 with ``Allow`` (JSON for an API client, when the request is given)."""
        why = f"{method} is not allowed here"
        if request is not None and wants_json(request):
            return json_error(405, why, headers=[("Allow", allow)])
        page = self.error_page(405, detail=why)
        page.headers.append(("Allow", allow))
        return page

    def _form_errors_answer(self, request: Any, errors: list[Any]) -> Response:
        """:meth:`_form_errors_page`, or for an API client every bad field as JSON."""
        if wants_json(request):
            bad = forms.FormErrors(list(errors))
            fields = [{"field": e.name, "value": e.value, "expected": e.expected} for e in errors]
            return json_error(400, bad.describe(), errors=fields)
        return self._form_errors_page(errors)

    def _failure_page(
        self, request: Any, status: int, detail: str, exc: BaseException | None
    ) -> Response:
        """A page's failure: the error page, or for an API client JSON (the detail only
        in development mode, as on the page)."""
        return self.error_page(status, detail=detail, exc=exc, request=request)


def _refusal(conn: Conn, exc: RequestError | JSONFieldErrors) -> Response:
    """A 4xx whose message is meant for the client (safe in production too): JSON when
    the client asks for JSON, else a short HTML page."""
    status = exc.http_status
    fields = [e.as_dict() for e in exc.errors] if isinstance(exc, JSONFieldErrors) else None
    headers = list(getattr(exc, "headers", ()))  # (a 405's Allow, an HTTPError's own)
    if wants_json(conn.request):
        return json_error(status, str(exc), errors=fields, headers=headers)
    page = error_response(status, dev=True, detail=str(exc))
    page.headers.extend(headers)
    return page


def _log(ctx: Context, message: str, exc: BaseException | None) -> None:
    log_error = getattr(ctx, "log_error", None)
    if log_error is not None:
        log_error(message, exc)
