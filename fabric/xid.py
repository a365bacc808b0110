"""What an XID means and what it asks for, after NVIDIA's XID catalog.

Source: NVIDIA, "Analyzing Xid Errors with the Xid Catalog" (Ampere and newer GPUs),
https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html: each XID has a
mnemonic, a description and a *resolution bucket* (the immediate action): ``RESTART_APP``
(the application that hit it restarts, the GPU is fine), ``RESET_GPU`` (drain the GPU and
reset it, ``nvidia-smi -r``), ``RESTART_BM`` (reboot the node), ``IGNORE`` (informational,
trend it), ``CONTACT_SUPPORT``. XID 154 (driver R570 and later) announces the recovery action
the driver wants (``nvmlDeviceGetGpuRecoveryAction``: none, GPU reset, node reboot, drain P2P).

Why a table: "critical" is not one list. XIDs 63 (a row was marked for remapping) and 92
(single-bit ECC rate high) are corrected errors, not lost data; 13, 31 and 43 are usually the
application's own doing; 48, 64, 74, 79, 94/95, 119/120, 140 ask for a reset or a reboot, and
until that happens the GPU is not fit for the next job: a state, not an event.
Pure: no I/O.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

CATALOG_URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"


class XidAction(StrEnum):
    """The catalog's immediate-action bucket."""

    IGNORE = "IGNORE"
    RESTART_APP = "RESTART_APP"
    RESET_GPU = "RESET_GPU"
    RESTART_BM = "RESTART_BM"
    CONTACT_SUPPORT = "CONTACT_SUPPORT"
    RECOVERY_ACTION = "RECOVERY_ACTION"
    """XID 154: the action is the one the driver names (NVML GPU recovery action)."""


class Xid(NamedTuple):
    code: int
    meaning: str
    action: XidAction
    data_loss: bool
    """Whether data a job computed is lost or may be wrong (an uncorrected memory error, a GPU gone)."""

    @property
    def needs_reset(self) -> bool:
        """Until the GPU is reset or the node rebooted, the condition holds (a state, not an event)."""
        return self.action in (XidAction.RESET_GPU, XidAction.RESTART_BM, XidAction.RECOVERY_ACTION)


XIDS: dict[int, Xid] = {x.code: x for x in (
    Xid(8, "GPU stopped processing (channel idle timeout)", XidAction.RESTART_APP, False),
    Xid(13, "graphics engine exception (usually the application)", XidAction.RESTART_APP, False),
    Xid(31, "GPU memory page fault (usually the application)", XidAction.RESTART_APP, False),
    Xid(43, "GPU stopped processing (the application's channel was reset)", XidAction.RESTART_APP, False),
    Xid(45, "preemptive cleanup after an earlier error or a killed process", XidAction.IGNORE, False),
    Xid(48, "double-bit ECC error (uncorrectable)", XidAction.RESET_GPU, True),
    Xid(61, "internal micro-controller breakpoint/warning", XidAction.RESET_GPU, False),
    Xid(62, "internal micro-controller halt", XidAction.RESET_GPU, False),
    Xid(63, "ECC page retirement or row remapping recorded (corrected; reset at the next drain)",
        XidAction.IGNORE, False),
    Xid(64, "ECC page retirement or row remapping failed", XidAction.RESET_GPU, True),
    Xid(69, "graphics engine class error", XidAction.RESTART_APP, False),
    Xid(74, "NVLink error", XidAction.RESET_GPU, False),
    Xid(79, "GPU has fallen off the bus", XidAction.RESTART_BM, True),
    Xid(92, "high single-bit ECC error rate (corrected)", XidAction.IGNORE, False),
    Xid(94, "contained ECC error (the application that touched the row must restart)",
        XidAction.RESTART_APP, True),
    Xid(95, "uncontained ECC error", XidAction.RESET_GPU, True),
    Xid(109, "context switch timeout", XidAction.RESTART_APP, False),
    Xid(119, "GSP RPC timeout", XidAction.RESET_GPU, False),
    Xid(120, "GSP error", XidAction.RESET_GPU, False),
    Xid(121, "C2C link error", XidAction.RESET_GPU, False),
    Xid(140, "unrecovered ECC error", XidAction.RESET_GPU, True),
    Xid(154, "GPU recovery action changed (the driver names the action)", XidAction.RECOVERY_ACTION, False),
)}
"""The XIDs a GPU fleet meets, as the catalog classes them (see the module doc)."""


def describe(code: int) -> Xid:
    """The catalog entry of ``code``; an XID the table does not hold is treated as one to investigate."""
    return XIDS.get(code) or Xid(code, "not in fleet's table: look it up in the XID catalog",
                                 XidAction.CONTACT_SUPPORT, False)


def is_critical(code: int) -> bool:
    """Lost data, or a GPU that needs a reset or a reboot before the next job."""
    xid = describe(code)
    return xid.data_loss or xid.needs_reset


__all__ = ["CATALOG_URL", "XIDS", "Xid", "XidAction", "describe", "is_critical"]
