"""The console's one typed configuration, built once in the CLI and passed down.

Precedence: command-line flags > ``FLEET_*`` environment variables > the TOML
file at ``$XDG_CONFIG_HOME/fleet/config.toml`` > defaults. Unknown keys are
rejected with the list of known ones, so a typo never silently does nothing.
Nothing reads the environment after start-up.

```toml
db = "/var/lib/fleet/fleet.db"
inventory = "/etc/fleet/inventory.toml"
read_only = true
theme = "fleet-high-contrast"
refresh_s = 1.0
diagnose = true      # judge the store every 30 s (and each replayed moment), findings -> events
job_latency = "auto"  # per-job latency sampler: auto/on (never in read-only mode), off
criteria = "/etc/fleet/acceptance.toml"  # the walkthrough's criteria file (W)
history = "http://prometheus:9090"  # read the fleet from Prometheus instead of db (docs/scale-out.md)
alertmanager = "http://alertmanager:9093"  # with history: the open findings come from here
reports_dir = "/srv/fleet/reports"  # where reports go by default ($XDG_DATA_HOME/fleet/reports)
ecmp_window_s = 60.0  # uplink throughput judged per leaf (topology bars, ECMP plan)
ecmp_sustain_s = 60.0  # an imbalance held this long flags the leaf
ecmp_verify_s = 10.0  # fresh counters before and after an ECMP change
screenshot_dir = "~/fleet-shots"  # where ctrl+s saves SVGs (default $XDG_DATA_HOME/fleet/screenshots)
fleet_columns = ["rx", "pause", "errors"]  # Fleet table columns to show (c on Fleet chooses and saves)

[keymap]            # binding id = keys (comma separated)
"fleet.filter" = "slash,f"
"app.replay_back" = "left_square_bracket"
```
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fleet.console.timespec import TimeSpecError, parse_moment

DEFAULT_THEME = "fleet-dark"


class ConfigError(ValueError):
    """The configuration cannot be used; the message names the source and the key."""


@dataclass(frozen=True, slots=True)
class Config:
    db_path: Path
    inventory_path: Path | None = None
    read_only: bool = False
    """Hide and refuse every action that changes a machine."""
    theme: str = DEFAULT_THEME
    at_ts: float | None = None
    """Start replaying this moment (unix seconds) instead of live."""
    refresh_s: float = 1.0
    """Seconds between two reads of the store for the screens."""
    keymap: Mapping[str, str] = field(default_factory=dict)
    """Binding id -> keys, handed to ``App.set_keymap``."""
    criteria_path: Path | None = None
    """Acceptance criteria TOML the walkthrough offers first."""
    ecmp_window_s: float = 60.0
    """Seconds of uplink throughput judged per leaf (``fleet.fabric.ecmp``'s default window)."""
    ecmp_sustain_s: float = 60.0
    """Seconds an imbalance must hold before a leaf is flagged (``fleet.fabric.ecmp``'s default)."""
    ecmp_verify_s: float = 10.0
    """Seconds of fresh counters before and after an ECMP change (``ApplySettings``' default)."""
    diagnose: bool = True
    """Run the diagnosis inside the console (every 30 s live, on each replayed moment) and store what
    it newly finds or sees cleared as events."""
    reports_dir: Path | None = None
    """Where reports go when no path is given (``$XDG_DATA_HOME/fleet/reports``, set by ``load_config``):
    kept, whatever the history's folder (``fleet demo``'s is temporary). None (a Config built by hand):
    a ``reports`` folder beside the history."""

    @property
    def reports_folder(self) -> Path:
        """``reports_dir``, or the ``reports`` folder beside the history when none was configured."""
        return self.reports_dir if self.reports_dir is not None else self.db_path.parent / "reports"
    job_latency: str = "auto"
    """Per-job latency sampler (probes inside running jobs): "auto" and "on" run it when live, "off"
    never; read-only mode never does (its probes are traffic on the tenants' links)."""
    screenshot_dir: Path = field(default_factory=lambda: Path("~/.local/share/fleet/screenshots").expanduser())
    """Where ctrl+s (and the palette's Screenshot) saves SVGs; made on first use."""
    fleet_columns: tuple[str, ...] | None = None
    """Keys of the Fleet table columns the user chose to show (``c`` on Fleet), None: the default set."""
    config_path: Path | None = None
    """The TOML file this configuration was read from (or would be): ``c`` on Fleet saves the columns there."""
    history_url: str | None = None
    """Prometheus holding the fleet's history (``--history``): the screens read it instead of ``db_path``,
    which keeps only this console's probes, actions and audit; the console collects nothing itself."""
    alertmanager_url: str | None = None
    """With ``history_url``: the Alertmanager whose active alerts are the open findings."""

    @property
    def job_latency_enabled(self) -> bool:
        """Whether the live console runs the per-job latency sampler."""
        return self.job_latency in ("auto", "on") and not self.read_only


_FILE_KEYS = {"db", "inventory", "read_only", "theme", "refresh_s", "keymap", "job_latency", "diagnose", "criteria",
              "reports_dir", "screenshot_dir", "fleet_columns",
              "history", "alertmanager",
              "ecmp_window_s", "ecmp_sustain_s", "ecmp_verify_s"}
JOB_LATENCY_CHOICES = ("auto", "on", "off")
_ENV_KEYS = {
    "FLEET_DB": "db",
    "FLEET_INVENTORY": "inventory",
    "FLEET_READ_ONLY": "read_only",
    "FLEET_THEME": "theme",
    "FLEET_REFRESH_S": "refresh_s",
    "FLEET_JOB_LATENCY": "job_latency",
    "FLEET_DIAGNOSE": "diagnose",
    "FLEET_REPORTS_DIR": "reports_dir",
    "FLEET_HISTORY": "history",
    "FLEET_ALERTMANAGER": "alertmanager",
}


def config_file_path(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".config")
    return Path(base) / "fleet" / "config.toml"


def default_screenshot_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_DATA_HOME/fleet/screenshots``: beside the default store, where ctrl+s saves SVGs."""
    return default_db_path(env).parent / "screenshots"


def default_db_path(env: Mapping[str, str]) -> Path:
    """``$XDG_DATA_HOME/fleet/fleet.db``: the path ``fleet.store.paths.default_db_path`` names, computed
    from the environment given here so that the CLI decides what environment counts."""
    base = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".local" / "share")
    return Path(base) / "fleet" / "fleet.db"


def default_reports_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_DATA_HOME/fleet/reports``: beside the default history, and kept."""
    return default_db_path(env).parent / "reports"


def _read_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path}: {error}") from error
    unknown = sorted(set(data) - _FILE_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown keys {unknown}; known: {sorted(_FILE_KEYS)}")
    keymap = data.get("keymap", {})
    if not isinstance(keymap, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in keymap.items()
    ):
        raise ConfigError(f"{path}: [keymap] maps binding ids to key strings")
    columns = data.get("fleet_columns")
    if columns is not None and not (isinstance(columns, list) and all(isinstance(c, str) for c in columns)):
        raise ConfigError(f"{path}: fleet_columns is a list of column names")
    return data


def _from_env(env: Mapping[str, str]) -> dict[str, Any]:
    return {key: env[name] for name, key in _ENV_KEYS.items() if env.get(name)}


def _bool(value: Any, source: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off", ""}:
        return False
    raise ConfigError(f"{source} must be true or false, not {value!r}")


def load_config(
    flags: Mapping[str, Any], env: Mapping[str, str], now_ts: float
) -> Config:
    """Merge flags (None: not given), environment and file into one ``Config``.

    ``flags`` keys: db, inventory, read_only, theme, at, refresh_s, history, alertmanager.
    """
    path = config_file_path(env)
    merged: dict[str, Any] = {}
    merged.update(_read_file(path))
    merged.update(_from_env(env))
    merged.update({k: v for k, v in flags.items() if v is not None and k != "at"})
    at_ts: float | None = None
    if flags.get("at") is not None:
        try:
            at_ts = parse_moment(str(flags["at"]), now_ts)
        except TimeSpecError as error:
            raise ConfigError(f"--at: {error}") from error
    try:
        refresh_s = float(merged.get("refresh_s", 1.0))
    except (TypeError, ValueError) as error:
        raise ConfigError(f"refresh_s must be a number of seconds: {error}") from error
    if refresh_s <= 0:
        raise ConfigError("refresh_s must be above zero")
    job_latency = str(merged.get("job_latency", "auto")).strip().lower()
    if job_latency not in JOB_LATENCY_CHOICES:
        raise ConfigError(f"job_latency must be one of {', '.join(JOB_LATENCY_CHOICES)}, not {job_latency!r}")
    inventory = merged.get("inventory")
    criteria = merged.get("criteria")
    history = _http_url(merged.get("history"), "history")
    alertmanager = _http_url(merged.get("alertmanager"), "alertmanager")
    if alertmanager is not None and history is None:
        raise ConfigError("alertmanager is where the findings come from when the history is Prometheus's: "
                          "give history (--history http://HOST:9090) too")
    ecmp_s = {key: _seconds(merged, key, default) for key, default in
              (("ecmp_window_s", 60.0), ("ecmp_sustain_s", 60.0), ("ecmp_verify_s", 10.0))}
    return Config(
        db_path=Path(merged["db"]).expanduser() if merged.get("db") else default_db_path(env),
        inventory_path=Path(inventory).expanduser() if inventory else None,
        read_only=_bool(merged.get("read_only", False), "read_only"),
        theme=str(merged.get("theme", DEFAULT_THEME)),
        at_ts=at_ts,
        refresh_s=refresh_s,
        keymap=dict(merged.get("keymap", {})),
        job_latency=job_latency,
        diagnose=_bool(merged.get("diagnose", True), "diagnose"),
        criteria_path=Path(criteria).expanduser() if criteria else None,
        reports_dir=Path(merged["reports_dir"]).expanduser() if merged.get("reports_dir")
        else default_reports_dir(env),
        screenshot_dir=(Path(str(merged["screenshot_dir"])).expanduser() if merged.get("screenshot_dir")
                        else default_screenshot_dir(env)),
        fleet_columns=tuple(merged["fleet_columns"]) if merged.get("fleet_columns") is not None else None,
        config_path=path,
        history_url=history,
        alertmanager_url=alertmanager,
        **ecmp_s,
    )


def _http_url(value: Any, key: str) -> str | None:
    if value is None or value == "":
        return None
    text = str(value).strip()
    parsed = urlsplit(text)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigError(f"{key} must be an http(s) URL such as http://HOST:9090, not {text!r}")
    return text.rstrip("/")


def _seconds(merged: Mapping[str, Any], key: str, default: float) -> float:
    try:
        value = float(merged.get(key, default))
    except (TypeError, ValueError) as error:
        raise ConfigError(f"{key} must be a number of seconds: {error}") from error
    if value <= 0:
        raise ConfigError(f"{key} must be above zero")
    return value
