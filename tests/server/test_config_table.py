"""One table of settings: every ``ServerConfig`` field marked ``setting(...)`` is a flag of
``pyweb serve`` and a key of ``pyweb.toml``, read the same way by both, and nothing else is."""

from __future__ import annotations

import argparse

import pytest

from pyweb.cli import build_parser, config_from_args
from pyweb.server import Server, ServerConfig
from pyweb.server.config import setting_default, settings
from pyweb.server.configfile import ConfigFileError, read_config_file


def serve_parser() -> argparse.ArgumentParser:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices["serve"]
    raise AssertionError("no serve command")


def sample(f, how) -> tuple[list[str], object, str]:
    """A command-line value, the value it means, and the same in TOML, for one setting."""
    if how.switch:
        return [], True, "true"
    if how.choices:
        value = how.choices[-1]
        return [value], value, f'"{value}"'
    text = "2.5" if isinstance(setting_default(f), float) else "3"
    value = text if how.parse is None else how.parse(text)
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
