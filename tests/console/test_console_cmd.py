"""`fleet console` refuses what it cannot use, before any screen opens."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from fleet.console.cli import main


def run(args: list[str], tmp_path: Path) -> tuple[int, str]:
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(tmp_path / "data")}
    result = CliRunner().invoke(main, ["console", *args], env=env)
    return result.exit_code, result.output


def test_console_needs_a_store_or_an_inventory(tmp_path: Path) -> None:
    code, output = run([], tmp_path)
    assert code == 2 and "no store at" in output and str(tmp_path / "data" / "fleet" / "fleet.db") in output


def test_console_rejects_an_unknown_theme_and_a_bad_time(tmp_path: Path) -> None:
    code, output = run(["--theme", "solarized"], tmp_path)
    assert code == 2 and "unknown theme 'solarized'" in output and "fleet-high-contrast" in output
    code, output = run(["--at", "last tuesday"], tmp_path)
    assert code == 2 and "--at" in output


def test_console_rejects_unknown_config_keys(tmp_path: Path) -> None:
    (tmp_path / "config" / "fleet").mkdir(parents=True)
    (tmp_path / "config" / "fleet" / "config.toml").write_text('colour = "red"\n', encoding="utf-8")
    code, output = run([], tmp_path)
    assert code == 2 and "unknown keys ['colour']" in output
