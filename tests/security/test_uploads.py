"""An upload never runs and is never shown inline on the site's origin.

* The docs' recipe (``f.keep()``) stores an upload in ``data/uploads/`` under a random
  name without a suffix: nothing there is served, and the loader never compiles a script
  from ``data/``, in ``--dev`` (on the next request) or when the site is loaded again (a
  SIGHUP reload builds the Site anew).
* ``move_to``/``save`` into the served part of the site raise ``UploadPlaceError``.
* ``send_upload`` serves a kept upload as an attachment with ``nosniff`` and a sandbox
  CSP, so uploaded HTML/SVG is never a page of the site.

Over real sockets, on both loops.
"""

from __future__ import annotations

import uuid

import pytest

import pyweb.testing
from pyweb.app.site import Site
from pyweb.app.uploads import may_load
from tests.csrf_helpers import TOKEN_PAGE, token_header
from tests.helpers import write_site

pytestmark = pytest.mark.loops("trio", "asyncio")

PWN = b'conn.return_("RCE", content_type="text/plain")\n'

UPLOAD = """
f = conn.files.get("file")
name = f.keep()
conn.return_(name, content_type="text/plain")
"""

UPLOAD_INTO_SITE = """
import os
f = conn.files.get("file")
target = os.path.join(conn.site_root, conn.query["to"], os.path.basename(f.filename))
f.move_to(target)
conn.return_("stored", content_type="text/plain")
"""

DOWNLOAD = """
from pyweb.app.uploads import send_upload
send_upload(conn.query["name"], filename=conn.query["filename"],
            content_type=conn.query["type"], inline=conn.query.get("inline") == "1")
"""


def multipart(filename: str, data: bytes, content_type: str = "application/octet-stream"):
    boundary = "b" + uuid.uuid4().hex
    body = (
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
        f"filename=\"{filename}\"\r\nContent-Type: {content_type}\r\n\r\n"
    ).encode() + data + f"\r\n--{boundary}--\r\n".encode()
    return body, {"Content-Type": f"multipart/form-data; boundary={boundary}"}


@pytest.fixture
def site_dir(tmp_path):
    return write_site(
        tmp_path / "site",
        {"upload.py": UPLOAD, "upload_into.py": UPLOAD_INTO_SITE, "download.py": DOWNLOAD,
         "uploads/.keep": "", **TOKEN_PAGE},
    )


def _post(client, path: str, filename: str, data: bytes, content_type="application/octet-stream"):
    body, headers = multipart(filename, data, content_type)
    return client.post(path, body, headers={**headers, **token_header(client)})


@pytest.mark.parametrize("dev", [True, False])
def test_a_kept_upload_never_runs_nor_is_served(site_dir, dev):
    site = Site(site_dir, dev=dev, secret_key="k" * 32)
    with pyweb.testing.serve(site) as client:
        response = _post(client, "/upload", "pwn.py", PWN)
        assert response.status == 200, response.text
        name = response.text
        stored = site_dir / "data" / "uploads" / name
        assert stored.read_bytes() == PWN and "." not in name
        for path in (f"/data/uploads/{name}", f"/data/uploads/{name}.py", "/uploads/pwn",
                     "/uploads/pwn.py", "/data/uploads/pwn"):  # fmt: skip
            assert client.get(path).status == 404, path
        # Even a .py file put into data/ by other means is never a page: in --dev on the
        # next request, and when the site is loaded again (what SIGHUP does).
        (site_dir / "data" / "uploads" / "pwn.py").write_bytes(PWN)
        assert client.get("/data/uploads/pwn").status == 404
        assert "RCE" not in client.get("/data/uploads/pwn.py").text
    again = Site(site_dir, dev=dev, secret_key="k" * 32)
    assert not any(name.startswith("data/") for name in again.scripts)
    assert not may_load(str(site_dir), str(site_dir / "data" / "uploads" / "pwn.py"))
    assert may_load(str(site_dir), str(site_dir / "upload.py"))


@pytest.mark.parametrize("folder", ["uploads", ".", "static"])
def test_moving_an_upload_into_the_served_site_is_refused(site_dir, folder):
    (site_dir / "static").mkdir(exist_ok=True)
    with pyweb.testing.serve(Site(site_dir, dev=True, secret_key="k" * 32)) as client:
        response = _post(client, f"/upload_into?to={folder}", "pwn.py", PWN)
        assert response.status == 500
        assert "UploadPlaceError" in response.text and "pwn.py" in response.text
        assert not (site_dir / folder / "pwn.py").exists()
        assert client.get("/uploads/pwn").status == 404 and client.get("/pwn").status == 404


@pytest.mark.parametrize(
    ("filename", "ctype", "data"),
    [
        ("x.html", "text/html", b"<script>alert(document.cookie)</script>"),
        ("x.svg", "image/svg+xml", b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>'),
        ("x.png", "text/html", b"<script>alert(1)</script>"),  # a lying type
    ],
)
def test_uploaded_html_and_svg_are_attachments(site_dir, filename, ctype, data):
    with pyweb.testing.serve(Site(site_dir, secret_key="k" * 32)) as client:
        name = _post(client, "/upload", filename, data, ctype).text
        for inline in ("0", "1"):  # asking for inline does not show HTML or SVG inline
            response = client.get("/download", params={
                "name": name, "filename": filename, "type": ctype, "inline": inline})  # fmt: skip
            assert response.status == 200 and response.body == data
            assert response.headers["content-disposition"].startswith("attachment;")
            assert response.headers["x-content-type-options"] == "nosniff"
            assert "sandbox" in response.headers["content-security-policy"]


def test_a_raster_image_may_be_shown_inline(site_dir):
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
    with pyweb.testing.serve(Site(site_dir, secret_key="k" * 32)) as client:
        name = _post(client, "/upload", "cat.png", png, "image/png").text
        response = client.get("/download", params={
            "name": name, "filename": "chat ü.png", "type": "image/png", "inline": "1"})  # fmt: skip
        assert response.headers["content-disposition"] == (
            "inline; filename=\"chat__.png\"; filename*=UTF-8''chat%20%C3%BC.png"
        )
        assert response.headers["content-type"] == "image/png"
        bad = client.get("/download", params={"name": "../../upload.py", "filename": "a",
                                              "type": "text/plain"})  # fmt: skip
        assert bad.status == 500  # ValueError: not a name keep() gave (no path walks out)
