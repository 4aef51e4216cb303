"""pyweb.mail: send mail from a page or a job (SMLserver's ``Web.Mail.send``, SMLserver §3).

::

    from pyweb import mail

    await mail.send("ada@example.com", "Your entry", "Thank you for signing the guest book.")
    await mail.send(["ada@example.com"], "Report", text, html=page, reply_to="me@example.com",
                    attachments=[("report.csv", data, "text/csv")])

Where it goes is the ``mail_url`` setting (``pyweb.toml``, ``--mail-url``, or the
``PYWEB_MAIL_URL`` variable), read once per process:

``console`` (the default)
    the message is printed on standard output instead of sent: development and the
    classroom (a site that never configured mail sends nothing by accident);
``outbox``
    the message is kept in :data:`OUTBOX` (a test reads it with ``pyweb.testing.outbox()``);
``smtp://USER:PASSWORD@HOST:587``
    SMTP with STARTTLS (required: a server that does not offer it is an error);
``smtps://USER:PASSWORD@HOST:465``
    SMTP over TLS from the first byte.

Query parameters: ``from=site@example.com`` (the sender, default ``pyweb@`` the host
name), ``timeout=10`` (seconds for the whole exchange), ``cafile=PATH`` (trust this
certificate authority too: a test's own server), ``tls=none`` (plain SMTP, only for a relay
on the same machine).

The SMTP conversation is aiosmtplib's, a maintained asyncio client; on trio it runs on the
runtime's asyncio bridge (:func:`pyweb.runtime.run_asyncio`). Bad input never reaches the
wire: a CR or LF in any header value (header injection) and a malformed address raise
:class:`MailError` naming the value. A server that cannot be reached, refuses the login or
the message raises :class:`MailDeliveryError` naming it, after at most ``timeout`` seconds:
a page never hangs on mail.
"""

from __future__ import annotations

import email.utils
import logging
import mimetypes
import os
import socket
import ssl
import sys
import threading
from collections.abc import Iterable, Sequence
from email.headerregistry import Address
from email.message import EmailMessage
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

__all__ = ["send", "configure", "MailError", "MailDeliveryError", "OUTBOX", "message"]

log = logging.getLogger("pyweb.mail")

OUTBOX: list[EmailMessage] = []
"""The messages sent with the ``outbox`` backend, oldest first."""


class MailError(ValueError):
    """A message that cannot be sent as given (a CR/LF in a header, a malformed address)."""


class MailDeliveryError(OSError):
    """The mail server could not be reached, or refused the login or the message."""


class _Settings:
    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query))
        self.url = url
        self.kind = url if url in ("console", "outbox") else parts.scheme
        if self.kind not in ("console", "outbox", "smtp", "smtps"):
            raise ValueError(
                f"mail_url is console, outbox, smtp://HOST:587 or smtps://HOST:465, got {url!r}"
            )
        self.host = parts.hostname or ""
        if self.kind in ("smtp", "smtps") and not self.host:
            raise ValueError(f"mail_url {url!r} names no host")
        if self.kind in ("smtp", "smtps"):  # said at start-up, not at the first mail
            from pyweb.extras import require

            require("aiosmtplib", "mail", f"mail_url {self.kind}://...")
        self.port = parts.port or (465 if self.kind == "smtps" else 587)
        self.username = unquote(parts.username) if parts.username else None
        self.password = unquote(parts.password) if parts.password else None
        self.sender = query.get("from") or f"pyweb@{socket.gethostname()}"
        _address(self.sender, "from")
        try:
            self.timeout = float(query.get("timeout", "10"))
        except ValueError:
            raise ValueError(f"mail_url timeout is seconds, got {query['timeout']!r}") from None
        if not self.timeout > 0:
            raise ValueError(f"mail_url timeout must be positive, got {self.timeout:g}")
        self.cafile = query.get("cafile")
        tls = query.get("tls", "required")
        if tls not in ("required", "none"):
            raise ValueError(f"mail_url tls is 'required' or 'none', got {tls!r}")
        self.plain = tls == "none"

    def __str__(self) -> str:  # never the password
        return self.kind if not self.host else f"{self.kind}://{self.host}:{self.port}"


_settings: _Settings | None = None
_lock = threading.Lock()
_warned = False


def configure(url: str) -> None:
    """Send through ``url`` from now on (see the module docstring); ValueError if it is bad,
    ``pyweb.extras.MissingExtra`` for SMTP without aiosmtplib (``pyweb[mail]``)."""
    global _settings
    new = _Settings(url)
    with _lock:
        _settings = new


def _current() -> _Settings:
    global _settings
    if _settings is None:
        with _lock:
            if _settings is None:
                _settings = _Settings(os.environ.get("PYWEB_MAIL_URL") or "console")
    return _settings


def backend_kind() -> str:
    """The backend mail goes to now: ``"console"``, ``"outbox"``, ``"smtp"`` or ``"smtps"``."""
    return _current().kind


# ---- checking what goes into the headers ----------------------------------------------------


def _header(value: str, what: str) -> str:
    if not isinstance(value, str):
        raise MailError(f"mail {what} must be text, got {value!r}")
    if "\r" in value or "\n" in value:
        raise MailError(f"mail {what} {value!r} contains a line break: refused (header injection)")
    if len(value.splitlines()) > 1 or any(ord(c) < 32 and c != "\t" or c == "\x7f" for c in value):
        # other line separators (\v, \f, \x1c-\x1e, \x85, \u2028...) and control characters
        raise MailError(f"mail {what} {value!r} contains a line break or a control character")
    return value


def _address(value: str, what: str) -> str:
    _header(value, what)
    name, addr = email.utils.parseaddr(value)
    local, at, domain = addr.rpartition("@")
    if not addr or not at or not local or not domain.strip(".") or " " in addr:
        raise MailError(f"mail {what} {value!r} is not an e-mail address (name@example.com)")
    try:
        Address(display_name=name, addr_spec=addr)
    except (ValueError, IndexError) as exc:
        raise MailError(f"mail {what} {value!r} is not an e-mail address: {exc}") from None
    return value


def _addresses(value: str | Iterable[str], what: str) -> list[str]:
    items = [value] if isinstance(value, str) else list(value)
    if not items:
        raise MailError(f"mail {what}: no address given")
    return [_address(item, what) for item in items]


def _attachment(item: Any) -> tuple[str, bytes, str]:
    if isinstance(item, str | os.PathLike):
        path = os.fspath(item)
        with open(path, "rb") as f:
            data = f.read()
        filename = os.path.basename(path)
        kind = mimetypes.guess_type(filename)[0] or "application/octet-stream"
    elif isinstance(item, tuple) and len(item) in (2, 3):
        filename, data = item[0], item[1]
        kind = item[2] if len(item) == 3 else (
            mimetypes.guess_type(filename)[0] or "application/octet-stream"
        )
        if isinstance(data, str):
            data = data.encode()
        if not isinstance(data, bytes):
            raise MailError(f"attachment {filename!r}: its content is bytes or text, got {data!r}")
    else:
        raise MailError(
            f"an attachment is a path or (filename, content[, content_type]), got {item!r}"
        )
    _header(filename, "attachment filename")
    _header(kind, "attachment content type")
    if kind.count("/") != 1:
        raise MailError(f"attachment {filename!r}: content type {kind!r} is not type/subtype")
    return filename, data, kind


def message(
    to: str | Sequence[str],
    subject: str,
    text: str,
    *,
    html: str | None = None,
    reply_to: str | None = None,
    attachments: Iterable[Any] = (),
    sender: str | None = None,
) -> EmailMessage:
    """The message :func:`send` would send (checked the same way), without sending it."""
    settings = _current()
    msg = EmailMessage()
    msg["From"] = _address(sender, "sender") if sender is not None else settings.sender
    msg["To"] = ", ".join(_addresses(to, "recipient"))
    msg["Subject"] = _header(subject, "subject")
    if reply_to is not None:
        msg["Reply-To"] = _address(reply_to, "reply_to")
    msg["Date"] = email.utils.formatdate(localtime=True)
    msg["Message-ID"] = email.utils.make_msgid()
    if not isinstance(text, str):
        raise MailError(f"mail text must be a str, got {text!r}")
    msg.set_content(text)
    if html is not None:
        msg.add_alternative(html, subtype="html")
    for item in attachments:
        filename, data, kind = _attachment(item)
        maintype, subtype = kind.split("/")
        msg.add_attachment(data, maintype=maintype, subtype=subtype, filename=filename)
    return msg


async def send(
    to: str | Sequence[str],
    subject: str,
    text: str,
    *,
    html: str | None = None,
    reply_to: str | None = None,
    attachments: Iterable[Any] = (),
    sender: str | None = None,
) -> None:
    """Send a message (see the module docstring): ``to`` one address or a list; ``html`` an
    alternative HTML body; ``attachments`` paths or ``(filename, content, content_type)``."""
    msg = message(to, subject, text, html=html, reply_to=reply_to, attachments=attachments,
                  sender=sender)  # fmt: skip
    settings = _current()
    if settings.kind == "outbox":
        OUTBOX.append(msg)
        return
    if settings.kind == "console":
        _print(msg)
        return
    from pyweb import runtime

    await runtime.run_asyncio(_smtp(settings, msg))


def _print(msg: EmailMessage) -> None:
    global _warned
    if not _warned:
        _warned = True
        log.warning("mail is printed, not sent: set mail_url (or PYWEB_MAIL_URL) to send it")
    rule = "-" * 72
    print(f"{rule}\npyweb.mail (console backend): this message was not sent\n{rule}\n"
          f"{msg.as_string()}\n{rule}", file=sys.stdout, flush=True)  # fmt: skip


async def _smtp(settings: _Settings, msg: EmailMessage) -> None:
    """The SMTP exchange, on an asyncio loop (the bridge's on trio)."""
    import asyncio

    from pyweb.extras import require

    aiosmtplib: Any = require("aiosmtplib", "mail", "sending mail over SMTP")

    context = ssl.create_default_context(cafile=settings.cafile)
    options: dict[str, Any] = {
        "hostname": settings.host, "port": settings.port, "timeout": settings.timeout,
        "username": settings.username, "password": settings.password, "tls_context": context,
    }  # fmt: skip
    if settings.kind == "smtps":
        options["use_tls"] = True
    elif settings.plain:
        options["start_tls"] = False
    else:
        options["start_tls"] = True  # required: a server without STARTTLS is an error
    try:
        await asyncio.wait_for(aiosmtplib.send(msg, **options), settings.timeout)
    except (aiosmtplib.SMTPException, OSError, TimeoutError, ssl.SSLError) as exc:
        reason = str(exc) or type(exc).__name__
        raise MailDeliveryError(f"mail server {settings} did not take the message: {reason}") from exc
