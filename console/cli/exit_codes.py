"""The exit statuses of every `fleet` command: one table, here and in docs/exit-codes.md.

A script (cron, CI, a runbook) branches on the status without parsing the
words: 0 the command did everything and found everything healthy; 1 it ran
and some host, pair or check failed; 2 what it was given is wrong; 3 there
was nothing to work with, or the history cannot be written. Every failure
also prints one line on stderr that says why.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    """Done: every host answered, every check and probe passed."""
    FAILED = 1
    """Done, but some hosts failed, a probe or check failed, a link test found bad pairs, an apply
    did not keep its change, or the audit chain is broken."""
    USAGE = 2
    """Usage or input error: a bad option (click's own), an inventory, criteria or scenario file with
    a mistake, a name the inventory does not hold, an inventory without what the command needs (no
    switches for `ecmp`), a file that is not a fleet history, an action refused in read-only mode."""
    NO_DATA = 3
    """Nothing to work with: no host answered, no history at the path, or the store cannot write
    (disk full, read-only or moved file)."""
    INTERRUPTED = 130
    """Ctrl-C (128 + SIGINT, the shell's convention); probe servers are stopped first."""
