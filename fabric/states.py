"""Connection and collection states of a host, as the user sees them.

Every failure is a specific state, never a generic "error": an engineer acts
differently on a refused connection, a rejected key and a changed host key.
"""

from __future__ import annotations

from enum import StrEnum


class HostState(StrEnum):
    CONNECTING = "connecting"
    OK = "ok"
    UNREACHABLE = "unreachable"
    """Connection refused, no route, or connect timeout."""
    AUTH_FAILED = "auth_failed"
    HOST_KEY_MISMATCH = "host_key_mismatch"
    """The host's key differs from known_hosts: we never connect."""
    HUNG = "hung"
    """Connected but a command produced nothing within its timeout."""
    SLOW = "slow"
    """Answers, but slower than the slow threshold."""
    COMMAND_FAILED = "command_failed"
    UNPARSABLE = "unparsable"

    @property
    def is_failure(self) -> bool:
        return self not in (HostState.OK, HostState.CONNECTING, HostState.SLOW)
