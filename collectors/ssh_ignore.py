"""No empty SSH_MSG_IGNORE in front of every packet fleet sends, unless the cipher is CBC.

asyncssh's ``send_packet`` puts an empty IGNORE before each packet once the
transport is encrypted: the countermeasure RFC 4251 (section 9.3.1) describes
against the chosen-plaintext attack on CBC's predictable IVs. With the ciphers
fleet negotiates with a modern sshd (AES-GCM, ChaCha20-Poly1305, CTR) it
protects nothing, and OpenSSH's client does not send it. It doubled the
packets fleet sends: a link test's probe starts and stops (channel open, exec
request, stdin's end, close) cost the console, and every node's sshd, one more
packet to encrypt, send, receive and decrypt each.
"""

from __future__ import annotations

import asyncssh
from asyncssh.constants import MSG_IGNORE

_CBC_SUFFIX = b"-cbc"


def only_for_cbc() -> None:
    """Send asyncssh's IGNORE packets only on a connection whose client-to-server cipher is CBC
    (idempotent; every client connection of the process)."""
    send_packet = asyncssh.SSHClientConnection.send_packet
    if getattr(send_packet, "only_for_cbc", False):
        return

    def _send_packet(self: asyncssh.SSHClientConnection, pkttype: int, *args: bytes,
                     handler: object = None) -> None:
        if pkttype == MSG_IGNORE and not getattr(self, "_enc_alg_cs", b"").endswith(_CBC_SUFFIX):
            return
        send_packet(self, pkttype, *args, handler=handler)  # type: ignore[arg-type]

    _send_packet.only_for_cbc = True  # type: ignore[attr-defined]
    asyncssh.SSHClientConnection.send_packet = _send_packet  # type: ignore[method-assign,assignment]
