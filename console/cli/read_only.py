"""Read-only mode on the command line: a command that would put traffic on the fabric or change a machine
refuses before it connects to anything.

Read-only is asked for with ``--read-only``, ``FLEET_READ_ONLY=1`` or ``read_only = true`` in the
config file (``console/config.py`` merges the three, flags first). It is for observers and customer
walkthroughs on a rented cluster: probes start perftest and nccl-tests on the nodes and load the
links the tenants' jobs use, and an ECMP change restarts or re-hashes a switch, so each of them is
an action and is refused with the reason. What only reads (``status``, ``plan``, ``list``, ``diff``,
``diagnose``, ``collect`` without ``--job-latency``) runs as usual.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

import click

from fleet.console.cli.common import fail
from fleet.console.cli.exit_codes import ExitCode
from fleet.console.config import ConfigError, load_config

F = TypeVar("F", bound=Callable[..., Any])

HOW = "--read-only / FLEET_READ_ONLY / read_only in the config file"


def read_only_option(fn: F) -> F:
    """``--read-only`` as the ``read_only_flag`` parameter."""
    return click.option("--read-only", "read_only_flag", is_flag=True,
                        help="Refuse to put traffic on the fabric or change a machine (as FLEET_READ_ONLY=1).")(fn)


def is_read_only(flag: bool) -> bool:
    """Whether this run is read-only: the flag, else the environment, else the config file."""
    try:
        return load_config({"read_only": True if flag else None}, os.environ, time.time()).read_only
    except ConfigError as error:
        fail(str(error), ExitCode.USAGE)


def refuse_if_read_only(flag: bool, what: str) -> None:
    """Exit 2 (``USAGE``, docs/exit-codes.md) with ``refused: read-only mode ...: <what>`` when the run is
    read-only; ``what`` says what the command would have done (``"starts perftest on gpu001 and gpu002"``)."""
    if is_read_only(flag):
        fail(f"refused: read-only mode ({HOW}) sends nothing and changes nothing: this command {what}",
             ExitCode.USAGE)


__all__ = ["HOW", "is_read_only", "read_only_option", "refuse_if_read_only"]
