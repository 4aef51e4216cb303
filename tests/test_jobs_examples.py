"""The example site's job and mail form (pages/guest_jobs.py, pages/guest_mail.py): the
nightly clean-up keeps the newest entries, ``pyweb jobs pages`` lists it, and "mail me my
entries" mails a guest's entries after the reply (read from ``pyweb.testing.outbox()``)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import trio

import pyweb.testing
from pyweb import db, qq
from pyweb.jobs import Job
from tests.helpers import until

PAGES = Path(__file__).resolve().parents[1] / "pages"


def test_the_nightly_clean_up_keeps_the_newest_entries(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("guest_jobs_under_test", PAGES / "guest_jobs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert isinstance(module.clean_guest_book, Job)
    assert str(module.clean_guest_book.when) == "daily at 03:00"
    module.KEEP = 3
    db.configure(f"sqlite:///{tmp_path / 'guests.sqlite3'}", site=str(PAGES))

    async def main() -> list[str]:
        for n in range(1, 8):
            await db.dml(qq("insert into guest (email, name, comment) values ({e}, {name}, 'hi')",
                            e=f"g{n}@example.com", name=f"guest {n}"))  # fmt: skip
        await module.clean_guest_book.run()
        rows = await db.list(qq("select name from guest order by id"))
        return [row["name"] for row in rows]

    try:
        assert trio.run(main) == ["guest 5", "guest 6", "guest 7"]
    finally:
        db.configure(None)


def test_pyweb_jobs_lists_the_example_sites_job() -> None:
    done = subprocess.run([sys.executable, "-m", "pyweb", "jobs", str(PAGES)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "guest_jobs.clean_guest_book" in done.stdout and "daily at 03:00" in done.stdout
    print(done.stdout)  # (the report quotes it)


@pytest.mark.loops("trio", "asyncio")
def test_mail_me_my_entries_mails_them_after_the_reply(loop: str) -> None:
    address = f"guest-{uuid.uuid4().hex[:8]}@example.com"
    box = pyweb.testing.outbox(clear=True)
    try:
        with pyweb.testing.serve(PAGES) as client:
            client.get("/guest")
            added = client.post("/guest_add", {"name": "Ada", "email": address,
                                               "comment": "Lovely <site>"}, csrf=True)  # fmt: skip
            assert added.status in (200, 303)
            form = client.get("/guest_mail")
            assert form.status == 200 and 'name="email"' in form.text
            sent = client.post("/guest_mail", {"email": address}, csrf=True)
            assert sent.status == 200 and "on their way" in sent.text
            until(lambda: any(m["To"] == address for m in box), "the mail after the reply")
            refused = client.post("/guest_mail", {"email": "not-an-address"}, csrf=True)
            assert refused.status == 400
    finally:
        pyweb.mail.configure("console")
    (msg,) = [m for m in box if m["To"] == address]
    assert msg["Subject"] == "Your guest book entries"
    assert "Ada wrote:\nLovely <site>" in msg.get_content()
