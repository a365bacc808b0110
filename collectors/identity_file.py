"""OpenSSH's rule for private key files: one that group or others may access is not used.

``sshkey_perm_ok()`` in OpenSSH's ``authfile.c`` refuses a key file owned by
the user whose mode has any group or other bit set (``mode & 077``), with the
words below; fleet applies the same rule to the inventory's ``identity_file``
before it connects anywhere, so a key that ``ssh -i`` would ignore is never
offered by fleet either (https://github.com/openssh/openssh-portable/blob/master/authfile.c).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def identity_file_problem(path: Path) -> str | None:
    """OpenSSH's one-line refusal of the key file at ``path``, or None when its mode is private enough.

    A file that cannot be examined (missing, unreadable folder) is left to the
    reader of the key, which says why it cannot read it.
    """
    try:
        found = path.stat()
    except OSError:
        return None
    if found.st_uid == os.getuid() and found.st_mode & 0o077:
        return (f"Permissions 0{stat.S_IMODE(found.st_mode) & 0o777:03o} for '{path}' are too open. "
                "It is required that your private key files are NOT accessible by others.")
    return None
