"""Every use of signing needs the secret key at start-up: a production site that only
calls ``csrf_token()`` (and has a POST-only service) refuses to start without one, with a
message saying how to set it; before, it started and answered 500."""

from __future__ import annotations

import pytest

from pyweb import signing
from pyweb.app.site import Site
from tests.helpers import write_site

USES = {
    "csrf_token": "from pyweb import csrf_token\nconn.return_(csrf_token())\n",
    "csrf module": "from pyweb.app import csrf\nconn.return_(csrf.csrf_token(conn))\n",
    "current_user": "from pyweb import auth\nconn.return_(auth.current_user() or '-')\n",
    "service POST": (
        "from pyweb import service\n\n@service('/add', methods=['POST'])\ndef add():\n"
        "    return {}\n"
    ),
    "service PUT": (
        "from pyweb import service\n\n@service('/put', methods=('PUT',))\ndef put():\n"
        "    return {}\n"
    ),
}


@pytest.fixture(autouse=True)
def no_key(monkeypatch):
    monkeypatch.delenv("PYWEB_SECRET_KEY", raising=False)
    yield
    signing.configure(None)


@pytest.mark.parametrize("use", list(USES))
def test_a_site_that_signs_refuses_to_start_without_a_key(tmp_path, use):
    root = write_site(tmp_path / "site", {"page.py": USES[use]})
    with pytest.raises(signing.MissingSecretKey, match="PYWEB_SECRET_KEY"):
        Site(root)
    Site(root, secret_key="k" * 32)  # with one it starts
    Site(root, dev=True)  # and in development mode it makes one


def test_a_site_that_does_not_sign_starts(tmp_path):
    root = write_site(tmp_path / "site", {"hello.py": "conn.return_('hi')\n", "a.html": "<p>"})
    Site(root)
