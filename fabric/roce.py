"""RoCEv2 facts that hashing depends on: its UDP port and the source port a flow label gives.

RoCEv2 carries RDMA in UDP to port 4791 (IANA); the UDP source port is the only
per-flow entropy an ECMP hash sees. With a non-zero GRH flow label the kernel
derives that port from the label (``rdma_flow_label_to_udp_sport``,
``include/rdma/ib_verbs.h``), so a probe given a flow label (perftest
``--flow_label``) crosses a path that can be computed before it is sent. Pure.
"""

from __future__ import annotations

ROCE_UDP_PORT = 4791


def flow_label_sport(flow_label: int) -> int:
    """The UDP source port of a RoCEv2 packet whose GRH carries ``flow_label`` (non-zero): the label's
    low 14 bits XOR its high 6, in 0xC000-0xFFFF."""
    low = (flow_label & 0x3FFF) ^ ((flow_label & 0xFC000) >> 14)
    return (low | 0xC000) & 0xFFFF


__all__ = ["ROCE_UDP_PORT", "flow_label_sport"]
