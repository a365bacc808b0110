"""Config precedence (flags > env > file), unknown keys rejected, --at parsing."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.console.config import ConfigError, load_config
from fleet.console.timespec import TimeSpecError, format_moment, parse_moment

NOW = 1_800_000_000.0


def write_config(tmp_path: Path, text: str) -> dict[str, str]:
    (tmp_path / "fleet").mkdir(exist_ok=True)
    (tmp_path / "fleet" / "config.toml").write_text(text, encoding="utf-8")
    return {"XDG_CONFIG_HOME": str(tmp_path), "HOME": str(tmp_path)}


def test_defaults_without_file(tmp_path: Path) -> None:
    config = load_config({}, {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}, NOW)
    assert config.db_path == tmp_path / "data" / "fleet" / "fleet.db"
    assert config.theme == "fleet-dark"
    assert config.read_only is False and config.at_ts is None and config.keymap == {}


def test_flags_beat_env_beat_file(tmp_path: Path) -> None:
    env = write_config(tmp_path, 'theme = "fleet-light"\ndb = "/file.db"\nread_only = true\n'
                                 '[keymap]\n"fleet.filter" = "f"\n')
    from_file = load_config({}, env, NOW)
    assert (from_file.theme, from_file.db_path, from_file.read_only) == ("fleet-light", Path("/file.db"), True)
    assert from_file.keymap == {"fleet.filter": "f"}
    env["FLEET_THEME"] = "fleet-high-contrast"
    env["FLEET_READ_ONLY"] = "0"
    from_env = load_config({}, env, NOW)
    assert (from_env.theme, from_env.read_only) == ("fleet-high-contrast", False)
    from_flags = load_config({"theme": "fleet-dark", "db": "/flag.db", "read_only": None}, env, NOW)
    assert (from_flags.theme, from_flags.db_path, from_flags.read_only) == ("fleet-dark", Path("/flag.db"), False)


def test_unknown_keys_are_rejected(tmp_path: Path) -> None:
    env = write_config(tmp_path, 'them = "fleet-light"\n')
    with pytest.raises(ConfigError, match="unknown keys \\['them'\\]"):
        load_config({}, env, NOW)


def test_bad_values_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="keymap"):
        load_config({}, write_config(tmp_path, '[keymap]\n"a" = 1\n'), NOW)
    with pytest.raises(ConfigError, match="refresh_s"):
        load_config({}, write_config(tmp_path, "refresh_s = 0\n"), NOW)
    with pytest.raises(ConfigError, match="read_only"):
        load_config({}, write_config(tmp_path, 'read_only = "maybe"\n'), NOW)


def test_at_accepts_iso_offsets_and_seconds(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    assert load_config({"at": "-15m"}, env, NOW).at_ts == NOW - 900
    assert load_config({"at": "1700000000"}, env, NOW).at_ts == 1_700_000_000.0
    iso = load_config({"at": "2023-11-14T22:13:20Z"}, env, NOW).at_ts
    assert iso == 1_700_000_000.0
    with pytest.raises(ConfigError, match="--at"):
        load_config({"at": "yesterday-ish"}, env, NOW)


def test_timespec_round_trip() -> None:
    assert parse_moment("2023-11-14 22:13:20", NOW) == 1_700_000_000.0  # no zone: UTC
    assert parse_moment("-2h", NOW) == NOW - 7200
    assert format_moment(1_700_000_000.0) == "2023-11-14 22:13:20Z"
    with pytest.raises(TimeSpecError):
        parse_moment("", NOW)



def test_the_job_latency_sampler_never_runs_in_read_only_mode(tmp_path: Path) -> None:
    for choice in ("auto", "on"):
        env = write_config(tmp_path, f'read_only = true\njob_latency = "{choice}"\n')
        assert load_config({}, env, NOW).job_latency_enabled is False
        assert load_config({"read_only": False}, env, NOW).job_latency_enabled is True
