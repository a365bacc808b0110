"""Widths of the InfiniBand PortCounters, by their sysfs file names.

IBA vol. 1, PortCounters attribute (docs/domain.md, "IB port counters"). These
counters saturate (stick at 2^width - 1) instead of wrapping: a value at the
maximum means "at least this many", never a rate. The data and packet
counters are not listed: mlx5 exposes them 64-bit (PortCountersExtended).
"""

from __future__ import annotations

IB_SATURATING_COUNTER_BITS: dict[str, int] = {
    "symbol_error": 16,
    "link_error_recovery": 8,
    "link_downed": 8,
    "port_rcv_errors": 16,
    "port_rcv_remote_physical_errors": 16,
    "port_rcv_switch_relay_errors": 16,
    "port_xmit_discards": 16,
    "port_xmit_constraint_errors": 8,
    "port_rcv_constraint_errors": 8,
    "local_link_integrity_errors": 4,
    "excessive_buffer_overrun_errors": 4,
    "VL15_dropped": 16,
    "port_xmit_wait": 32,
}
