"""Uploads stream to disk, over real sockets: a multipart form is parsed as it arrives
(the incremental parser gives the same parts however the body is split), a big file goes
to a temporary file that holds exactly the bytes sent, a page can move it into place, it
is gone when the request ends otherwise, a malformed body is a 400, and the text fields
and small files held in memory count against ``max_body_memory``."""

from __future__ import annotations

import glob
import hashlib
import os
import socket
import tempfile
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyweb.testing
from pyweb.app.formdata import FormDataError, FormLimits, parse_multipart
from pyweb.app.multipart import MultipartError, MultipartParser
from pyweb.app.uploads import UploadedFile
from pyweb.server.budget import BUDGET

from .test_bodies import read_reply, site

pytestmark = pytest.mark.loops("trio", "asyncio")


class Collect:
    """A sink that records what the parser delivers (pieces joined per part)."""

    def __init__(self) -> None:
        self.parts: list[list] = []

    def start_part(self, disposition: str, content_type: str) -> None:
        self.parts.append([disposition, content_type, b""])

    def part_data(self, data: bytes) -> None:
        assert data  # never an empty piece
        self.parts[-1][2] += data

    def end_part(self) -> None:
        self.parts[-1].append("end")


def parse_in_pieces(body: bytes, boundary: str, cuts: list[int]) -> object:
    """The parts, or the error, when ``body`` is fed cut at ``cuts``."""
    sink = Collect()
    parser = MultipartParser(boundary, sink, max_part_header=64)
    try:
        start = 0
        for cut in [*sorted(cuts), len(body)]:
            parser.feed(body[start:cut])
            start = max(start, cut)
        parser.close()
    except MultipartError as err:
        return ("error", str(err))
    return sink.parts


# Bodies from a small alphabet that makes delimiters, CRLFs and dashes likely to collide.
pieces = st.sampled_from(
    [b"--B", b"\r\n", b"--", b"-", b"\r", b"\n", b"B", b"x", b" ", b"\r\n--B", b"\r\n\r\n",
     b"Content-Disposition: form-data; name=a", b"Content-Type: text/plain", b"--B--"]
)  # fmt: skip
bodies = st.lists(pieces, max_size=40).map(b"".join)


@pytest.mark.loop_free
@given(bodies, st.lists(st.integers(0, 400), max_size=12))
def test_a_body_split_anywhere_parses_as_the_whole(body, cuts):
    whole = parse_in_pieces(body, "B", [])
    assert parse_in_pieces(body, "B", cuts) == whole
    assert parse_in_pieces(body, "B", list(range(len(body)))) == whole  # byte by byte


@pytest.mark.loop_free
@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.text("ab", min_size=1, max_size=3), st.binary(max_size=300)), max_size=5),
    st.lists(st.integers(0, 3000), max_size=20),
)
def test_well_formed_bodies_split_anywhere_give_their_parts(parts, cuts):
    body = b"".join(
        b'--B\r\nContent-Disposition: form-data; name="%s"; filename="f"\r\n\r\n%s\r\n'
        % (name.encode(), data)
        for name, data in parts
    ) + b"--B--\r\n"
    got = parse_in_pieces(body, "B", cuts)
    assert [p[2] for p in got] == [data for _, data in parts]  # type: ignore[union-attr]


@pytest.mark.loop_free
def test_an_upload_over_its_memory_bound_is_a_temporary_file(tmp_path):
    big = os.urandom(3000)
    body = (b'--B\r\nContent-Disposition: form-data; name="f"; filename="a.bin"\r\n\r\n'
            + big + b'\r\n--B\r\nContent-Disposition: form-data; name="t"\r\n\r\ntext\r\n--B--')  # fmt: skip
    limits = FormLimits(max_file_memory=1000, upload_dir=str(tmp_path))
    fields, files = parse_multipart(body, "B", limits)
    upload = files[0][1]
    assert fields == [("t", "text")] and upload.size == 3000 and upload.data == big
    assert upload.path is not None and upload.path.parent == tmp_path
    assert upload.read(10) == big[:10]
    moved = upload.move_to(tmp_path / "kept.bin")
    upload.close()
    assert moved.read_bytes() == big and os.listdir(tmp_path) == ["kept.bin"]
    small = UploadedFile("s", "text/plain", b"12")
    assert small.path is None and small.data == b"12"
    assert small.save(tmp_path / "s.txt").read_bytes() == b"12"


@pytest.mark.loop_free
def test_a_failed_parse_leaves_no_temporary_file(tmp_path):
    body = (b'--B\r\nContent-Disposition: form-data; name="f"; filename="a"\r\n\r\n'
            + b"x" * 5000)  # no closing delimiter  # fmt: skip
    with pytest.raises(FormDataError, match="closing boundary"):
        parse_multipart(body, "B", FormLimits(max_file_memory=100, upload_dir=str(tmp_path)))
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------- over real sockets

UPLOAD_PAGE = """\
import hashlib, os
f = conn.files["f"]
digest = hashlib.sha256()
while piece := f.read(65536):
    digest.update(piece)
where = str(f.path) if f.path else "memory"
if conn.form.get("keep"):
    f.move_to(os.path.join(conn.form["keep"], "kept.bin"))
conn.return_(f"{f.filename} {f.size} {digest.hexdigest()} {where} {conn.form.get('note', '')}")
"""


def multipart(data: bytes, **fields: str) -> tuple[bytes, dict[str, str]]:
    body = b"".join(
        b'--xyz\r\nContent-Disposition: form-data; name="%s"\r\n\r\n%s\r\n'
        % (name.encode(), value.encode())
        for name, value in fields.items()
    )
    body += (b'--xyz\r\nContent-Disposition: form-data; name="f"; filename="up.bin"\r\n'
             b"Content-Type: application/octet-stream\r\n\r\n" + data + b"\r\n--xyz--\r\n")  # fmt: skip
    return body, {"Content-Type": "multipart/form-data; boundary=xyz"}


@pytest.fixture
def upload_dir(tmp_path):
    folder = tmp_path / "spool"
    folder.mkdir()
    return folder


def serve_uploads(tmp_path, upload_dir):
    root = tmp_path / "site"
    root.mkdir()
    (root / "up.py").write_text(UPLOAD_PAGE)
    limits = FormLimits(upload_dir=str(upload_dir))
    return pyweb.testing.serve(site(root, form_limits=limits))


def test_a_big_upload_arrives_whole_on_disk_and_is_gone_after_the_request(tmp_path, upload_dir):
    data = os.urandom(8 * 1024 * 1024 + 7)
    with serve_uploads(tmp_path, upload_dir) as c:
        body, headers = multipart(data, note="héllo")
        r = c.request("POST", "/up", body=body, headers=headers)
        assert r.status == 200, r.text
        name, size, digest, where, note = r.text.split(" ")
        assert (name, int(size), note) == ("up.bin", len(data), "héllo")
        assert digest == hashlib.sha256(data).hexdigest()  # byte for byte
        assert where.startswith(str(upload_dir))  # it went to disk...
        assert os.listdir(upload_dir) == []  # ...and is gone with the request
        # A small one stays in memory.
        r = c.request("POST", "/up", body=multipart(b"tiny")[0], headers=headers)
        assert r.text.split(" ")[3] == "memory"
        assert BUDGET.held == 0


def test_a_page_can_move_an_upload_into_place(tmp_path, upload_dir):
    data = os.urandom(3 * 1024 * 1024)
    keep = tmp_path / "uploads"
    keep.mkdir()
    with serve_uploads(tmp_path, upload_dir) as c:
        body, headers = multipart(data, keep=str(keep))
        r = c.request("POST", "/up", body=body, headers=headers)
        assert r.status == 200, r.text
    assert (keep / "kept.bin").read_bytes() == data
    assert os.listdir(upload_dir) == []


@pytest.mark.parametrize(
    "body",
    [
        b"--xyz\r\nContent-Disposition: form-data; name=f; filename=a\r\n\r\n" + b"x" * 200_000,
        b"no boundary anywhere",
        b"--xyz\r\nContent-Disposition: attachment; name=f\r\n\r\nx\r\n--xyz--\r\n",
        b"--xyzQ",
    ],
    ids=["unclosed", "no-boundary", "not-form-data", "bad-delimiter"],
)
def test_a_malformed_multipart_body_is_a_400_and_leaves_no_file(tmp_path, upload_dir, body):
    with serve_uploads(tmp_path, upload_dir) as c:
        r = c.request("POST", "/up", body=body,
                      headers={"Content-Type": "multipart/form-data; boundary=xyz"})  # fmt: skip
        assert r.status == 400, r.text
        assert os.listdir(upload_dir) == []


def test_concurrent_big_uploads_are_byte_identical_and_leave_nothing(tmp_path, upload_dir):
    datas = [os.urandom(4 * 1024 * 1024) for _ in range(8)]
    replies: list[bytes] = [b""] * len(datas)
    with serve_uploads(tmp_path, upload_dir) as c:

        def post(i: int) -> None:
            body, _ = multipart(datas[i])
            with socket.create_connection(("127.0.0.1", c.server.port), timeout=60) as s:
                s.sendall(b"POST /up HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                          b"Content-Type: multipart/form-data; boundary=xyz\r\n"
                          b"Content-Length: %d\r\n\r\n" % len(body) + body)  # fmt: skip
                replies[i] = read_reply(s)

        threads = [threading.Thread(target=post, args=(i,)) for i in range(len(datas))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for data, reply in zip(datas, replies, strict=True):
        assert reply.startswith(b"HTTP/1.1 200"), reply[:200]
        assert hashlib.sha256(data).hexdigest().encode() in reply
    assert os.listdir(upload_dir) == []


def test_text_fields_count_against_the_memory_budget(tmp_path, upload_dir):
    """The budget is spent: a small upload spools to disk instead; a text field is a 503."""
    with serve_uploads(tmp_path, upload_dir) as c:
        limit = BUDGET.limit
        BUDGET.limit = 3  # (the server runs in this process)
        try:
            body, headers = multipart(b"small", note="n" * 100)
            r = c.request("POST", "/up", body=body, headers=headers)
            assert r.status == 503, r.text
            body, headers = multipart(b"small")
            r = c.request("POST", "/up", body=body, headers=headers)
            assert r.status == 200 and r.text.split(" ")[3].startswith(str(upload_dir)), r.text
        finally:
            BUDGET.limit = limit
        assert BUDGET.held == 0 and os.listdir(upload_dir) == []


def test_the_default_temporary_folder_is_left_clean(tmp_path):
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "pyweb-upload-*")))
    root = tmp_path / "site"
    root.mkdir()
    (root / "up.py").write_text(UPLOAD_PAGE)
    with pyweb.testing.serve(site(root)) as c:
        body, headers = multipart(os.urandom(2 * 1024 * 1024))
        assert c.request("POST", "/up", body=body, headers=headers).status == 200
    after = set(glob.glob(os.path.join(tempfile.gettempdir(), "pyweb-upload-*")))
    assert after <= before
