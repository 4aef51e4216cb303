"""pyweb.mail against a real SMTP server started by the test (aiosmtpd), with a certificate
authority of the test's own (trustme): STARTTLS with a login, TLS from the first byte, on
trio and asyncio; header injection and bad addresses refused naming the value; an
unreachable or silent server is an error naming it after a bounded wait; the console and
outbox backends; ``pyweb.testing.outbox()`` with a served site."""

from __future__ import annotations

import asyncio
import email
import email.policy
import socket
import ssl
import threading
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
import trio
import trustme
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult
from hypothesis import given
from hypothesis import strategies as st

import pyweb.testing
from pyweb import mail
from tests.helpers import free_port, write_site

pytestmark = [pytest.mark.timeout(60), pytest.mark.loops("trio", "asyncio")]


class Inbox:
    """aiosmtpd's handler: keeps every message it is given."""

    def __init__(self) -> None:
        self.envelopes: list[Any] = []
        self.transcript: list[str] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.envelopes.append(envelope)
        tls = session.ssl is not None or server.transport.get_extra_info("ssl_object") is not None
        self.transcript.append(f"MAIL FROM:<{envelope.mail_from}> RCPT TO:{envelope.rcpt_tos} "
                               f"TLS={tls} AUTH={session.authenticated}")  # fmt: skip
        return "250 OK"

    def message(self, index: int = -1) -> EmailMessage:
        raw = self.envelopes[index].content
        return email.message_from_bytes(raw, _class=EmailMessage, policy=email.policy.default)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[trustme.CA, Path]:
    authority = trustme.CA()
    path = tmp_path_factory.mktemp("ca") / "ca.pem"
    authority.cert_pem.write_to_path(str(path))
    return authority, path


def server_context(authority: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    return context


def check_login(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
    ok = data.login == b"site" and data.password == b"s3cret"
    return AuthResult(success=ok, handled=False)


@pytest.fixture
def starttls_server(ca) -> Iterator[tuple[Inbox, int]]:
    inbox = Inbox()
    port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port,
                            tls_context=server_context(ca[0]), require_starttls=True,
                            authenticator=check_login, auth_require_tls=True)  # fmt: skip
    controller.start()
    try:
        yield inbox, port
    finally:
        controller.stop()


@pytest.fixture
def tls_server(ca) -> Iterator[tuple[Inbox, int]]:
    inbox = Inbox()
    port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port,
                            ssl_context=server_context(ca[0]))  # fmt: skip
    controller.start()
    try:
        yield inbox, port
    finally:
        controller.stop()


def run(loop: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``await fn(*args, **kwargs)`` on the test's loop."""
    if loop == "trio":
        return trio.run(lambda: fn(*args, **kwargs))
    return asyncio.run(fn(*args, **kwargs))


@pytest.fixture(autouse=True)
def back_to_the_console() -> Iterator[None]:
    yield
    mail.configure("console")


def test_starttls_with_a_login_delivers_text_html_and_attachments(
    starttls_server, ca, loop: str
) -> None:
    inbox, port = starttls_server
    mail.configure(f"smtp://site:s3cret@127.0.0.1:{port}?cafile={ca[1]}&from=guests@example.org")
    run(loop, mail.send, ["ada@example.com", "Bob <bob@example.com>"], "Your entry",
        "Thank you, Ada.", html="<p>Thank you, <b>Ada</b>.</p>",
        reply_to="owner@example.org", attachments=[("entry.csv", "name,text\nada,hi\n", "text/csv")])  # fmt: skip
    (envelope,) = inbox.envelopes
    assert envelope.mail_from == "guests@example.org"
    assert envelope.rcpt_tos == ["ada@example.com", "bob@example.com"]
    assert "TLS=True AUTH=True" in inbox.transcript[0]
    msg = inbox.message()
    assert msg["Subject"] == "Your entry" and msg["Reply-To"] == "owner@example.org"
    assert msg.get_body(("plain",)).get_content().strip() == "Thank you, Ada."  # type: ignore[union-attr]
    assert "<b>Ada</b>" in msg.get_body(("html",)).get_content()  # type: ignore[union-attr]
    (attachment,) = list(msg.iter_attachments())
    assert attachment.get_filename() == "entry.csv"
    assert attachment.get_content() == "name,text\nada,hi\n"
    print("\n".join(inbox.transcript))  # (the report quotes it)


def test_tls_from_the_first_byte(tls_server, ca, loop: str) -> None:
    inbox, port = tls_server
    mail.configure(f"smtps://127.0.0.1:{port}?cafile={ca[1]}&from=site@example.org")
    run(loop, mail.send, "ada@example.com", "Hello", "over TLS")
    assert inbox.message()["To"] == "ada@example.com"
    assert "TLS=True" in inbox.transcript[0]


def test_a_wrong_password_is_an_error_naming_the_server(starttls_server, ca, loop: str) -> None:
    _, port = starttls_server
    mail.configure(f"smtp://site:wrong@127.0.0.1:{port}?cafile={ca[1]}")
    with pytest.raises(mail.MailDeliveryError, match=f"smtp://127.0.0.1:{port}"):
        run(loop, mail.send, "ada@example.com", "Hello", "text")


def test_an_untrusted_certificate_is_refused(starttls_server, loop: str) -> None:
    _, port = starttls_server  # its certificate authority is not given: not trusted
    mail.configure(f"smtp://site:s3cret@127.0.0.1:{port}")
    with pytest.raises(mail.MailDeliveryError, match="CERTIFICATE_VERIFY_FAILED|certificate"):
        run(loop, mail.send, "ada@example.com", "Hello", "text")


def test_a_server_without_starttls_is_refused(loop: str) -> None:
    inbox = Inbox()
    port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)  # no TLS at all
    controller.start()
    try:
        mail.configure(f"smtp://127.0.0.1:{port}")
        with pytest.raises(mail.MailDeliveryError, match="STARTTLS|TLS|starttls"):
            run(loop, mail.send, "ada@example.com", "Hello", "text")
        assert inbox.envelopes == []  # nothing went out in the clear
        mail.configure(f"smtp://127.0.0.1:{port}?tls=none")  # said explicitly: a local relay
        run(loop, mail.send, "ada@example.com", "Hello", "text")
        assert len(inbox.envelopes) == 1
    finally:
        controller.stop()


def test_an_unreachable_server_is_an_error_naming_it(loop: str) -> None:
    port = free_port()  # nobody listens
    mail.configure(f"smtp://127.0.0.1:{port}?timeout=2")
    with pytest.raises(mail.MailDeliveryError, match=f"mail server smtp://127.0.0.1:{port}"):
        run(loop, mail.send, "ada@example.com", "Hello", "text")


def test_a_silent_server_is_given_up_after_the_timeout(loop: str) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    thread = threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True)
    thread.start()
    port = listener.getsockname()[1]
    mail.configure(f"smtp://127.0.0.1:{port}?timeout=0.5")
    try:
        with pytest.raises(mail.MailDeliveryError, match=f"smtp://127.0.0.1:{port}"):
            run(loop, mail.send, "ada@example.com", "Hello", "text")
    finally:
        listener.close()
        for sock in accepted:
            sock.close()


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"subject": "Hi\r\nBcc: all@example.com"}, "subject 'Hi\\\\r\\\\nBcc: all@example.com' contains a line break"),
        ({"to": "ada@example.com\nBcc: x@example.com"}, "contains a line break"),
        ({"reply_to": "me@example.com\r\n"}, "reply_to 'me@example.com\\\\r\\\\n' contains a line break"),
        ({"to": "not an address"}, "recipient 'not an address' is not an e-mail address"),
        ({"to": "ada@"}, "recipient 'ada@' is not an e-mail address"),
        ({"to": []}, "no address given"),
        ({"attachments": [("a\nb.txt", b"x")]}, "attachment filename 'a\\\\nb.txt' contains a line break"),
        ({"attachments": ["just text"]}, "No such file|just text"),
    ],
)
def test_bad_input_is_refused_naming_the_value(kwargs: dict, words: str, loop: str) -> None:
    mail.configure("outbox")
    arguments = {"to": "ada@example.com", "subject": "Hello", "text": "hi", **kwargs}
    to, subject, text = arguments.pop("to"), arguments.pop("subject"), arguments.pop("text")
    with pytest.raises((mail.MailError, OSError), match=words):
        run(loop, mail.send, to, subject, text, **arguments)
    assert mail.OUTBOX == [] or all(m["Subject"] != subject for m in mail.OUTBOX)


@pytest.mark.parametrize("url, words", [
    ("ftp://example.com", "mail_url is console, outbox"),
    ("smtp://", "names no host"),
    ("smtp://h?timeout=soon", "timeout is seconds"),
    ("smtp://h?from=nobody", "'nobody' is not an e-mail address"),
])  # fmt: skip
def test_a_bad_mail_url_is_refused(url: str, words: str, loop: str) -> None:
    with pytest.raises(ValueError, match=words):
        mail.configure(url)


def test_the_console_backend_prints_the_message(capsys: pytest.CaptureFixture[str], loop: str) -> None:
    mail.configure("console")
    run(loop, mail.send, "ada@example.com", "Printed", "not sent anywhere")
    out = capsys.readouterr().out
    assert "pyweb.mail (console backend): this message was not sent" in out
    assert "Subject: Printed" in out and "not sent anywhere" in out


def test_outbox_gives_the_mail_a_served_site_sent(tmp_path: Path, loop: str) -> None:
    site = write_site(tmp_path / "site", {
        "send.py": """
            from pyweb import mail
            await mail.send(conn.form["to"], "Your entry", "You wrote: " + conn.form["text"])
            conn.return_("sent")
        """,
    })  # fmt: skip
    box = pyweb.testing.outbox(clear=True)
    with pyweb.testing.serve(site) as client:
        assert client.get("/send?to=ada@example.com&text=hello").text == "sent"
        assert client.get("/send?to=bad%0d%0aBcc:x@example.com&text=x").status == 500
    (msg,) = box
    assert msg["To"] == "ada@example.com" and msg.get_content().strip() == "You wrote: hello"


@pytest.mark.loop_free
@given(subject=st.text(max_size=60))
def test_any_subject_with_a_line_break_is_refused_and_any_other_is_kept(subject: str) -> None:
    mail.configure("outbox")
    try:
        if len(subject.splitlines()) > 1 or any(c < " " and c != "\t" or c == "\x7f" for c in subject) \
                or subject.endswith(("\r", "\n")):  # fmt: skip
            with pytest.raises(mail.MailError, match="contains a line break"):
                mail.message("ada@example.com", subject, "text")
        else:
            msg = mail.message("ada@example.com", subject, "text")
            parsed = email.message_from_bytes(bytes(msg), policy=email.policy.default)
            # the same words (the header's own folding may change spaces), and no new header
            assert parsed["Subject"].split() == subject.split()
            assert set(parsed.keys()) == set(msg.keys()) and parsed["Bcc"] is None
    finally:
        mail.configure("console")


@pytest.mark.loop_free  # (refused before a loop is chosen)
def test_pyweb_serve_refuses_a_bad_mail_url(tmp_path: Path, loop: str) -> None:
    import subprocess
    import sys

    site = write_site(tmp_path / "site", {"index.py": "conn.return_('hi')\n"})
    done = subprocess.run([sys.executable, "-m", "pyweb", "serve", str(site), "--port", "0",
                           "--mail-url", "smtp://"], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2
    assert "pyweb: error: --mail-url: mail_url 'smtp://' names no host" in done.stderr
