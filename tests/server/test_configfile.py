"""pyweb.toml: keys are the flags of ``pyweb serve``; bad files name the line and the reason."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyweb.cli import build_parser, config_from_args
from pyweb.server import Server, ServerConfig
from pyweb.server.config import setting_default, settings
from pyweb.server.configfile import (
    ConfigFileError,
    find_config_file,
    read_config_file,
)


def serve_parser() -> argparse.ArgumentParser:
    return build_parser().subcommands["serve"]


def write(tmp_path, text: str) -> str:
    path = tmp_path / "pyweb.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_values_are_checked_like_the_flags(tmp_path):
    path = write(
        tmp_path,
        'host = "0.0.0.0"\nport = 8080\nscheduler = "pool"\nkeepalive_timeout = 2.5\n'
        'dev = true\naccess_log = "none"\nmax-body = 1000\n',
    )
    values = read_config_file(path, serve_parser())
    assert values == {
        "host": "0.0.0.0",
        "port": 8080,
        "scheduler": "pool",
        "keepalive_timeout": 2.5,
        "dev": True,
        "access_log": None,
        "max_body": 1000,
    }


def test_flags_override_the_file(tmp_path):
    parser = serve_parser()
    parser.set_defaults(**read_config_file(write(tmp_path, "port = 8080\nhost = 'a'\n"), parser))
    args = parser.parse_args(["--port", "9000"])
    assert (args.port, args.host) == (9000, "a")


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("port = 8080\nprot = 1\n", 2, "unknown setting 'prot'; did you mean 'port'?"),
        ("\n\nport = 70000\n", 3, "a port is between 0 and 65535, got 70000"),
        ("port = true\n", 1, "--port takes a value, not true"),
        ("scheduler = 'fast'\n", 1, "'fast' is not one of one-to-one, pool, nothread"),
        ("dev = 'yes'\n", 1, "--dev is true or false, not 'yes'"),
        ("header_timeout = -1\n", 1, "must be a positive number of seconds"),
        ("host = 3\n", 1, "--host takes text, not 3"),
        ("port = [1, 2]\n", 1, "takes one value"),
        ("[server]\nport = 1\n", 1, "unknown section [server]: settings are top-level keys"),
        ("port = 80\nport = 81\n", 2, "not valid TOML"),
        ("host = 'unterminated\n", 1, "not valid TOML"),
    ],
)
def test_a_bad_file_names_the_line_and_the_reason(tmp_path, text, line, words):
    path = write(tmp_path, text)
    with pytest.raises(ConfigFileError) as info:
        read_config_file(path, serve_parser())
    assert info.value.line == line
    assert words in str(info.value)
    assert str(info.value).startswith(f"{path}:{line}: ")


def test_the_file_cannot_name_itself_or_the_site(tmp_path):
    for key in ("config", "dir"):
        with pytest.raises(ConfigFileError, match="unknown setting"):
            read_config_file(write(tmp_path, f"{key} = 'x'\n"), serve_parser())


def test_find_config_file(tmp_path):
    assert find_config_file(str(tmp_path), None) is None
    (tmp_path / "pyweb.toml").write_text("")
    assert find_config_file(str(tmp_path), None) == str(tmp_path / "pyweb.toml")
    with pytest.raises(ConfigFileError, match="no such configuration file"):
        find_config_file(str(tmp_path), str(tmp_path / "other.toml"))


def test_unreadable_bytes(tmp_path):
    path = tmp_path / "pyweb.toml"
    path.write_bytes(b"port = 1\n\xff\n")
    with pytest.raises(ConfigFileError, match="cannot read it"):
        read_config_file(str(path), serve_parser())


@given(st.text(max_size=200))
def test_any_text_is_read_or_refused_with_a_config_file_error(tmp_path_factory, text):
    directory = tmp_path_factory.mktemp("cfg")
    path = directory / "pyweb.toml"
    try:
        path.write_text(text, encoding="utf-8")
    except UnicodeEncodeError:
        return  # lone surrogates cannot be in a file on disk
    try:
        values = read_config_file(str(path), serve_parser())
    except ConfigFileError as exc:
        assert exc.reason
    else:
        assert set(values) <= {a.dest for a in serve_parser()._actions}


# ---- one table: every ServerConfig field marked setting(...) is a flag and a key, read alike


def sample(f, how) -> tuple[list[str], object, str]:
    """A command-line value, the value it means, and the same in TOML, for one setting."""
    if how.switch:
        return [], True, "true"
    if how.choices:
        value = how.choices[-1]
        return [value], value, f'"{value}"'
    text = "2.5" if isinstance(setting_default(f), float) else "3"
    if how.parse is not None:
        try:
            how.parse(text)
        except ValueError:  # "3" is no value of this setting (a path): its default's text
            text = str(setting_default(f))
    value = text if how.parse is None else how.parse(text)
    if isinstance(value, tuple):  # a list setting: "a, b" on the command line, a TOML list
        return [text], value, "[" + ", ".join(f'"{v}"' for v in value) + "]"
    return [text], value, text if isinstance(value, int | float) else f'"{value}"'


def test_every_setting_is_a_flag_and_a_key_read_alike(tmp_path):
    flags = {a.dest for a in serve_parser()._actions if a.option_strings}
    assert {f.name for f, _ in settings()} <= flags
    assert flags - {f.name for f, _ in settings()} == {"help", "config"}
    for f, how in settings():
        argv, value, toml = sample(f, how)
        flag = "--" + f.name.replace("_", "-")
        args = build_parser().parse_args(["serve", str(tmp_path), flag, *argv])
        assert getattr(args, f.name) == value, f.name
        path = tmp_path / "pyweb.toml"
        path.write_text(f"{f.name} = {toml}\n")
        if how.in_file:
            assert read_config_file(str(path)) == {f.name: value}
        else:
            with pytest.raises(ConfigFileError, match="unknown setting"):
                read_config_file(str(path))


def test_the_defaults_of_the_flags_are_the_fields_defaults(tmp_path):
    args = build_parser().parse_args(["serve", str(tmp_path)])
    config = config_from_args(args)
    plain = ServerConfig(site_dir=str(tmp_path))
    for f, _ in settings():
        assert getattr(config, f.name) == getattr(plain, f.name), f.name
    assert config.limits == plain.limits


def test_max_body_replaces_the_limits_one():
    config = ServerConfig(max_body=10)
    assert config.limits.max_body == 10
    assert ServerConfig().limits.max_body == ServerConfig().limits.max_body


def test_settings_that_need_a_restart_come_from_the_table():
    restart = {f.name for f, how in settings() if how.restart}
    assert {"host", "port", "scheduler", "access_log"} <= restart
    assert set(Server.FIXED_ON_RELOAD) == restart | {"backlog"}
    assert "keepalive_timeout" not in restart and "dev" not in restart
