"""Host and user names as OpenSSH accepts them, checked before any name reaches a connection.

OpenSSH 9.6 refuses a host name or a user name carrying shell metacharacters
or control characters on the command line, because ``%h``/``%r`` expand into
``ProxyCommand``, ``LocalCommand`` and ``Match exec`` lines that a shell runs
(CVE-2023-51385; ``valid_hostname()`` and ``valid_ruser()`` in ``ssh.c``, see
https://www.openssh.com/txt/release-9.6). fleet never passes a name to a shell,
but the same inventory feeds ``ssh`` by hand, ``~/.ssh/config`` matching, jump
hosts, known_hosts and every screen and report: a name that OpenSSH would
refuse is refused here too, with the reason, so it never reaches any of them.

On top of OpenSSH's rules: no ``@`` or ``/`` in a host name (a user or a path
would hide in it), and no character Unicode does not call printable (C1
controls, format characters such as a right-to-left override, line
separators), since OpenSSH looks at bytes and would let their UTF-8 through.
"""

from __future__ import annotations

HOST_FORBIDDEN = "'`\"$\\;&<>|(){},"
"""Characters OpenSSH's ``valid_hostname()`` refuses anywhere in a host name (``ssh.c``, 9.8)."""

USER_FORBIDDEN = "'`\";&<>|(){}"
"""Characters OpenSSH's ``valid_ruser()`` refuses anywhere in a user name."""

MAX_HOST_CHARS = 1025
"""NI_MAXHOST, the longest host name ``getnameinfo`` returns (glibc ``<netdb.h>``)."""


def _visible(char: str) -> str:
    """How a refused character is named in a reason: printable ones quoted, others by code point."""
    return repr(char) if char.isprintable() and not char.isspace() else f"U+{ord(char):04X}"


def _unprintable(text: str) -> str | None:
    for char in text:
        if char.isspace():
            return f"whitespace ({_visible(char)})"
        if not char.isprintable():
            return f"a control or invisible character ({_visible(char)})"
    return None


def hostname_problem(name: str) -> str | None:
    """Why OpenSSH (or fleet) would refuse ``name`` as a host name or address; None when it is usable."""
    if not name:
        return "empty"
    if len(name) > MAX_HOST_CHARS:
        return f"longer than {MAX_HOST_CHARS} characters"
    if name.startswith("-"):
        return "starts with '-' (ssh would read it as an option)"
    hidden = _unprintable(name)
    if hidden is not None:
        return f"contains {hidden}"
    for char in name:
        if char in HOST_FORBIDDEN:
            return f"contains {_visible(char)}, which OpenSSH refuses in a host name"
        if char in "@/":
            return f"contains {_visible(char)}: give the user in `user`, not in the name"
    return None


def username_problem(user: str) -> str | None:
    """Why OpenSSH would refuse ``user`` as a remote user name; None when it is usable."""
    if not user:
        return "empty"
    if user.startswith("-"):
        return "starts with '-' (ssh would read it as an option)"
    hidden = _unprintable(user)
    if hidden is not None:
        return f"contains {hidden}"
    for char in user:
        if char in USER_FORBIDDEN:
            return f"contains {_visible(char)}, which OpenSSH refuses in a user name"
    if user.endswith("\\"):
        return "ends with a backslash"
    return None


def jump_host_problem(spec: str) -> str | None:
    """Why ``[user@]host[:port]`` is not a usable jump host; None when it is."""
    user, at, hostport = spec.rpartition("@")
    if at:
        problem = username_problem(user)
        if problem is not None:
            return f"user {user!r}: {problem}"
    host, colon, port = hostport.partition(":")
    if colon and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        return f"port {port!r} is not an integer 1-65535"
    problem = hostname_problem(host)
    return None if problem is None else f"host {host!r}: {problem}"
