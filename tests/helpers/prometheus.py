"""A real Prometheus and a real Alertmanager for tests: started on spare loopback ports with temp
data folders and configs, ready when their ``/-/ready`` answers, always stopped afterwards.

Both come from Debian's packages (``make system-packages``, run by ``make test``); where they are
missing the tests that need them skip and say so. Configs are written as JSON, which both
read as YAML.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

T = TypeVar("T")

READY_TIMEOUT_S = 60.0
"""Prometheus replays its (empty) WAL and loads the rules first: a second or two, longer on a loaded machine."""


def binary(name: str, *alternatives: str) -> str:
    """The path of a Prometheus tool, or skip the test saying how to get it."""
    for candidate in (name, *alternatives):
        found = shutil.which(candidate)
        if found:
            return found
    pytest.skip(f"{name} is not installed and could not be (`make system-packages` runs apt-get install prometheus "
                "prometheus-alertmanager, as root or with password-less sudo)")


def spare_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(check: Callable[[], T | None], timeout_s: float, what: str, poll_s: float = 0.2) -> T:
    """Poll ``check`` until it returns something other than None or False, at most ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last is not None and last is not False:
            return last
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what} (last: {last!r})")


def get_json(url: str, timeout_s: float = 10.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return json.loads(response.read())


def _ready(url: str, process: subprocess.Popen[bytes], log: Path) -> bool:
    if process.poll() is not None:
        raise AssertionError(f"{url} exited with {process.returncode}: {log.read_text(errors='replace')[-2000:]}")
    try:
        with urllib.request.urlopen(url + "/-/ready", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


@contextlib.contextmanager
def _running(args: list[str], url: str, log: Path) -> Iterator[None]:
    with log.open("wb") as output:
        process = subprocess.Popen(args, stdout=output, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: _ready(url, process, log), READY_TIMEOUT_S, f"{args[0]} ready at {url}")
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


@dataclass(frozen=True, slots=True)
class Prometheus:
    url: str
    folder: Path

    def query(self, promql: str, at: float | None = None) -> list[dict[str, Any]]:
        """An instant query's result (a vector's samples); AssertionError with Prometheus's words on an error."""
        params = {"query": promql} | ({"time": repr(at)} if at is not None else {})
        return self._api("query", params)["result"]  # type: ignore[no-any-return]

    def query_range(self, promql: str, start: float, end: float, step_s: float) -> list[dict[str, Any]]:
        params = {"query": promql, "start": repr(start), "end": repr(end), "step": repr(step_s)}
        return self._api("query_range", params)["result"]  # type: ignore[no-any-return]

    def _api(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        try:
            document = get_json(url)
        except urllib.error.HTTPError as error:
            raise AssertionError(f"{params.get('query')}: {error.read().decode(errors='replace')}") from None
        assert document["status"] == "success", document
        return document["data"]  # type: ignore[no-any-return]

    def targets(self) -> list[dict[str, Any]]:
        return get_json(f"{self.url}/api/v1/targets")["data"]["activeTargets"]  # type: ignore[no-any-return]


def scrape_config(targets: list[str], *, interval_s: float = 1.0, job: str = "fleet") -> dict[str, Any]:
    """A Prometheus config that scrapes ``targets`` (HOST:PORT) every ``interval_s`` and evaluates rules as often."""
    every = f"{round(interval_s * 1000)}ms"  # Prometheus durations are whole numbers of a unit
    return {
        "global": {"scrape_interval": every, "evaluation_interval": every, "scrape_timeout": every},
        "scrape_configs": [{"job_name": job, "static_configs": [{"targets": targets}]}],
    }


@contextlib.contextmanager
def running_prometheus(folder: Path, config: dict[str, Any], *, rule_files: tuple[Path, ...] = ()) -> Iterator[Prometheus]:
    """Prometheus with ``config`` (plus ``rule_files``) on a spare port, its data in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    config = config | {"rule_files": [str(path) for path in rule_files]}
    (folder / "prometheus.yml").write_text(json.dumps(config, indent=2))
    port = spare_port()
    url = f"http://127.0.0.1:{port}"
    args = [binary("prometheus"), f"--config.file={folder / 'prometheus.yml'}",
            f"--storage.tsdb.path={folder / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn"]
    with _running(args, url, folder / "prometheus.log"):
        yield Prometheus(url, folder)


@dataclass(frozen=True, slots=True)
class Alertmanager:
    url: str

    def alerts(self, **filters: str) -> list[dict[str, Any]]:
        query = f"?{urllib.parse.urlencode(filters)}" if filters else ""
        return get_json(f"{self.url}/api/v2/alerts{query}")  # type: ignore[no-any-return]


@contextlib.contextmanager
def running_alertmanager(folder: Path, webhook: str | None = None) -> Iterator[Alertmanager]:
    """Alertmanager on a spare port, no cluster, its data in ``folder``; its one receiver sends nowhere, or
    every notification, firing and resolved, to ``webhook`` at once (grouped by alert, no waiting)."""
    folder.mkdir(parents=True, exist_ok=True)
    receiver: dict[str, Any] = {"name": "test"}
    if webhook is not None:
        receiver["webhook_configs"] = [{"url": webhook, "send_resolved": True}]
    config = {"route": {"receiver": "test", "group_by": ["..."], "group_wait": "0s", "group_interval": "1s",
                        "repeat_interval": "1h"},
              "receivers": [receiver]}
    (folder / "alertmanager.yml").write_text(json.dumps(config, indent=2))
    port = spare_port()
    url = f"http://127.0.0.1:{port}"
    args = [binary("prometheus-alertmanager", "alertmanager"), f"--config.file={folder / 'alertmanager.yml'}",
            f"--storage.path={folder / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=", "--log.level=warn"]
    with _running(args, url, folder / "alertmanager.log"):
        yield Alertmanager(url)
