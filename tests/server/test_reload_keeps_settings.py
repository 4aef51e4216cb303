"""Settings are frozen per connection (Marlow §6, ``Server.reconfigure``): after a reload,
a connection opened before it finishes with every setting it started with (timeouts, the
dev flag, limits), and a connection opened after it gets the new ones. Real sockets."""

from __future__ import annotations

import time

import pytest

from pyweb.server import ServerConfig

pytestmark = [pytest.mark.timeout(30), pytest.mark.loops("trio", "asyncio")]

OLD = {"dev": False, "max_body": 100, "body_timeout": 5.0}
NEW = {"dev": True, "max_body": 10_000, "body_timeout": 0.3}


def reload(srv, kit, **settings) -> None:
    config = ServerConfig(port=0, access_log=None, error_log=srv.error_log, **settings)
    srv.call(srv.server.reconfigure, config, kit.app)


def slow_post(c, pause: float):
    """A POST whose body stops half-way for ``pause`` seconds, then arrives whole."""
    c.send(kit_build("POST", "/echo", [("Content-Length", "10")]) + b"12345")
    time.sleep(pause)
    try:
        c.send(b"67890")
    except OSError:
        pass  # the server may have hung up already
    return c.read_response()


kit_build = None  # set by the fixture below (tests/server is not a package)


@pytest.fixture(autouse=True)
def _build(kit):
    global kit_build
    kit_build = kit.build


def test_a_connection_opened_before_a_reload_keeps_its_settings(kit):
    with kit.running(None, **OLD) as srv, srv.connect() as old:
        assert old.request().body == b"hello"  # accepted and served before the reload
        reload(srv, kit, **NEW)
        with srv.connect() as new:
            # limits: the old connection still refuses a 500-byte body; the new one takes it
            assert new.request("POST", "/echo", body=b"x" * 500).status == 200
            # dev flag: a handler error shows its detail only on the new connection
            assert b"kaboom" in new.request("GET", "/boom").body
            assert b"kaboom" not in old.request("GET", "/boom").body
            # body timeout: 0.3 s on the new connection (408), 5 s on the old one
            assert slow_post(new, 1.0).status == 408
            assert slow_post(old, 1.0).body == b"got:1234567890"
            # a protocol error's page: no detail under the old connection's dev=False
            old.send(b"GET / HTTP/1.1\r\nHost: test\r\nBad Header: x\r\n\r\n")
            page = old.read_response()
            assert page.status == 400 and b"Detail" not in page.body
            too_big = kit.build("POST", "/echo", body=b"y" * 500)
        with srv.connect() as old2:  # a connection made after the reload: the new settings
            old2.send(too_big)
            assert old2.read_response().status == 200


def test_the_old_connection_refuses_what_its_limits_refuse(kit):
    with kit.running(None, **OLD) as srv, srv.connect() as old:
        assert old.request().body == b"hello"
        reload(srv, kit, **NEW)
        assert old.request("POST", "/echo", body=b"x" * 500).status == 413


def _site(root, dev: bool):
    from pyweb.app.site import Site

    return Site(root, dev=dev)


@pytest.mark.parametrize("status", [False, True])
def test_the_old_connection_keeps_its_site_and_its_dev_flag(kit, tmp_path, status):
    """The dev flag lives in the Site too (its error pages show tracebacks): a reload gives
    new connections the new Site, while an old connection's pages, and the error pages the
    server draws for it, come from the Site it started with. With and without the status
    page, whose counts survive the reload."""
    (tmp_path / "hello.py").write_text("conn.return_('hello')\n")
    (tmp_path / "boom.py").write_text("raise ValueError('kaboom-in-a-page')\n")
    old_site, new_site = _site(tmp_path, dev=False), _site(tmp_path, dev=True)
    with kit.running(old_site, dev=False, status=status) as srv, srv.connect() as old:
        assert old.request().status == 200
        config = ServerConfig(
            port=0, access_log=None, error_log=srv.error_log, dev=True, status=status
        )
        srv.call(srv.server.reconfigure, config, new_site)
        with srv.connect() as new:
            # a page that raises: the traceback only under the new Site (dev)
            assert b"kaboom-in-a-page" in new.request("GET", "/boom").body
            page = old.request("GET", "/boom")
            assert page.status == 500 and b"kaboom-in-a-page" not in page.body
            # an error the server answers itself, drawn by the connection's own Site
            bad = b"GET / HTTP/1.1\r\nHost: test\r\nBad Header: x\r\n\r\n"
            new.send(bad)
            assert b"Bad Header" in new.read_response().body
            old.send(bad)
            page = old.read_response()
            assert page.status == 400 and b"Bad Header" not in page.body
