"""What collectors produce and the store keeps: numeric samples of named series.

A series is identified by ``(host, metric, device, port)``:
- NIC port metrics: device = RDMA device (``mlx5_0``), port = HCA port (``"1"``);
  netdev (ethtool) counters of a RoCE NIC are filed under its RDMA device too.
- Optics per lane: device = RDMA device, port = ``"L<lane>"`` (from 0);
  module-wide optics (temperature, voltage): port = ``""``.
- GPU metrics: device = ``gpu<N>``, port = ``""``.
- Switch port metrics: host = switch, device = port name (``swp1``, ``Ethernet0``).
- Host-wide metrics: device = port = ``""``.

Metric names carry their unit (``_bytes``, ``_gbps``, ``_c``, ``_dbm``, ``_per_s``).
The catalogue below says which are counters (monotonic, turned into rates),
error counters (stored only when they change) and gauges.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum


class MetricKind(StrEnum):
    GAUGE = "gauge"
    COUNTER = "counter"
    ERROR = "error"
    """A counter of rare events: stored on change only, never as a continuous series."""


@dataclass(frozen=True, slots=True)
class MetricSpec:
    name: str
    kind: MetricKind
    unit: str
    help: str


SeriesKey = tuple[str, str, str]
"""(metric, device, port) within one host."""


@dataclass(frozen=True, slots=True)
class HostSample:
    """Every value one host reported at one instant (``ts``: unix seconds)."""

    host: str
    ts: float
    values: Mapping[SeriesKey, float]


class SeriesLayout:
    """The keys of a sample in order, shared by every sample with the same keys.

    A fleet's nodes report the same ports and GPUs, so one layout serves them all
    (``SeriesLayouts``): a ``PackedValues`` is then this plus 8 bytes a value, where a
    dict of its own would be ~70 bytes a value spread over the heap. At a thousand
    lines a second that is what keeps a collector's working set in the CPU's cache.
    Never changed once built, so that whoever holds one (a stream, a rate plan, the
    store's catalogue) may key on it.
    """

    __slots__ = ("index", "keys")

    def __init__(self, keys: tuple[SeriesKey, ...]) -> None:
        self.keys = keys
        self.index: dict[SeriesKey, int] = {key: at for at, key in enumerate(keys)}
        """Key -> its place in ``keys`` (read-only)."""


class PackedValues(Mapping[SeriesKey, float]):
    """A sample's values as a shared ``SeriesLayout`` and one float64 array in its order.

    Read-only like any ``HostSample.values``: whoever builds one hands over ``data``
    and never writes to it again. The collector's hot path (rates, store) reads
    ``layout`` and ``data`` directly; everything else sees a plain mapping.
    """

    __slots__ = ("data", "layout")

    def __init__(self, layout: SeriesLayout, data: array[float]) -> None:
        self.layout = layout
        self.data = data

    def __getitem__(self, key: SeriesKey) -> float:
        return self.data[self.layout.index[key]]

    def __contains__(self, key: object) -> bool:
        return key in self.layout.index

    def __iter__(self) -> Iterator[SeriesKey]:
        return iter(self.layout.keys)

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"PackedValues({dict(zip(self.layout.keys, self.data, strict=True))!r})"


class SeriesLayouts:
    """The layouts of the samples one reader of a fleet sees (a collector, for as long as it runs):
    equal keys get one layout, so a thousand nodes of one shape share it, and whatever is worked out
    per layout (a rate plan, the store's columns) is worked out once for all of them.

    Holds at most ``most`` layouts and ``most`` joins; past that the oldest go (a long run that has
    seen more shapes than this: GPUs that come and go, counters a driver update added). A layout
    that went is still valid where it is held; the next sample of its keys gets a new one.
    """

    def __init__(self, most: int = 4096) -> None:
        self.most = most
        self._by_keys: dict[tuple[SeriesKey, ...], SeriesLayout] = {}
        self._joined: dict[tuple[SeriesLayout, SeriesLayout], SeriesLayout | None] = {}

    def of(self, keys: tuple[SeriesKey, ...]) -> SeriesLayout:
        """The layout of ``keys`` (equal tuples give the same layout while it is kept)."""
        layout = self._by_keys.get(keys)
        if layout is None:
            layout = self._by_keys[keys] = SeriesLayout(keys)
            if len(self._by_keys) > self.most:
                del self._by_keys[next(iter(self._by_keys))]
        return layout

    def joined(self, first: SeriesLayout, second: SeriesLayout) -> SeriesLayout | None:
        """The layout of ``first``'s keys then ``second``'s; None when they share a key. Looked up
        by the two layouts themselves, not by hashing the hundreds of keys of a line."""
        pair = (first, second)
        if pair in self._joined:
            return self._joined[pair]
        index = first.index
        joined = None if any(key in index for key in second.keys) else self.of(first.keys + second.keys)
        self._joined[pair] = joined
        if len(self._joined) > self.most:
            del self._joined[next(iter(self._joined))]
        return joined

    def packed(self, values: Mapping[SeriesKey, float]) -> PackedValues:
        """``values`` as ``PackedValues`` (the same object if it already is)."""
        if type(values) is PackedValues:
            return values
        return PackedValues(self.of(tuple(values)), array("d", values.values()))

    def merged(self, first: Mapping[SeriesKey, float], second: Mapping[SeriesKey, float]) -> Mapping[SeriesKey, float]:
        """``{**first, **second}``: one ``PackedValues`` when the two share no key (a line's
        counters, then its rates, then its optics readings), else that dict."""
        if not second:
            return first
        one, two = self.packed(first), self.packed(second)
        layout = self.joined(one.layout, two.layout)
        if layout is None:
            return {**first, **second}
        return PackedValues(layout, one.data + two.data)


def _specs(kind: MetricKind, unit: str, names_and_help: dict[str, str]) -> dict[str, MetricSpec]:
    return {name: MetricSpec(name, kind, unit, text) for name, text in names_and_help.items()}


C, E, G = MetricKind.COUNTER, MetricKind.ERROR, MetricKind.GAUGE

METRICS: dict[str, MetricSpec] = {
    # --- RDMA port, /sys/class/infiniband/<dev>/ports/<p>/counters (data converted to bytes)
    **_specs(C, "bytes", {
        "tx_bytes": "port_xmit_data x 4 (the counter counts 4-byte words)",
        "rx_bytes": "port_rcv_data x 4",
    }),
    **_specs(C, "packets", {
        "tx_packets": "port_xmit_packets",
        "rx_packets": "port_rcv_packets",
        "unicast_xmit_packets": "unicast_xmit_packets",
        "unicast_rcv_packets": "unicast_rcv_packets",
        "multicast_xmit_packets": "multicast_xmit_packets",
        "multicast_rcv_packets": "multicast_rcv_packets",
    }),
    "port_xmit_wait": MetricSpec("port_xmit_wait", C, "ticks", "time with data queued but not sent (congestion, not an error)"),
    **_specs(E, "events", {
        "symbol_error": "PHY symbol errors (16-bit, saturates)",
        "link_error_recovery": "link retrains (8-bit, saturates)",
        "link_downed": "link went down (8-bit, saturates): rising means flapping",
        "port_rcv_errors": "malformed packets received",
        "port_rcv_remote_physical_errors": "EBP-marked packets received",
        "port_rcv_switch_relay_errors": "packets the switch could not relay",
        "port_xmit_discards": "packets dropped on transmit (congestion; 16-bit, saturates)",
        "port_xmit_constraint_errors": "transmit constraint errors",
        "port_rcv_constraint_errors": "receive constraint errors",
        "local_link_integrity_errors": "local link integrity threshold exceeded",
        "excessive_buffer_overrun_errors": "receive buffer overruns",
        "VL15_dropped": "VL15 (SMP) packets dropped",
    }),
    # --- mlx5 hw_counters
    **_specs(E, "events", {
        "out_of_buffer": "receive WQEs ran out: packet dropped",
        "out_of_sequence": "out-of-sequence packets received (loss upstream)",
        "packet_seq_err": "NAK sequence errors received",
        "implied_nak_seq_err": "implied NAK sequence errors",
        "local_ack_timeout_err": "ACK timeouts on the sender (loss)",
        "rnr_nak_retry_err": "RNR NAK retries exceeded",
        "duplicate_request": "duplicate requests received (retransmissions)",
        "req_cqe_error": "requester completions with error",
        "resp_cqe_error": "responder completions with error",
        "req_cqe_flush_error": "requester completions flushed with error",
        "resp_cqe_flush_error": "responder completions flushed with error",
        "roce_adp_retrans": "adaptive retransmissions",
        "roce_slow_restart": "slow restarts",
        "rx_icrc_encapsulated": "packets with a bad ICRC",
    }),
    **_specs(C, "packets", {
        "np_ecn_marked_roce_packets": "CE-marked RoCE packets received (notification point)",
        "np_cnp_sent": "CNPs sent back to senders",
        "rp_cnp_handled": "CNPs the sender acted on (reaction point)",
        "rp_cnp_ignored": "CNPs the sender ignored",
    }),
    # --- netdev, ethtool -S (priority 3 carries RoCE)
    **_specs(C, "frames", {
        "rx_prio3_pause": "PFC pause frames received on priority 3 (the network is congested)",
        "tx_prio3_pause": "PFC pause frames sent on priority 3 (this NIC is congested)",
    }),
    **_specs(C, "usec", {
        "rx_prio3_pause_duration": "time paused by received PFC frames, microseconds",
        "tx_prio3_pause_duration": "time of sent PFC pauses, microseconds",
    }),
    **_specs(C, "bits", {
        "rx_bits_phy": "bits received at the PHY",
        "rx_corrected_bits_phy": "bits corrected by FEC (pre-FEC BER numerator)",
    }),
    **_specs(E, "events", {
        "rx_discards_phy": "packets dropped for lack of receive buffer",
        "tx_discards_phy": "packets dropped on transmit",
        "rx_prio3_discards": "priority-3 packets dropped",
        "rx_pcs_symbol_err_phy": "symbol errors FEC could not fix",
        "rx_crc_errors_phy": "received frames dropped for a bad FCS (lost to bit errors)",
        "link_down_events_phy": "link down events seen by the PHY",
        "carrier_changes": "netdev carrier losses and returns (two per flap)",
        "tx_pause_storm_warning_events": "pause storm warnings",
        "tx_pause_storm_error_events": "pause storm errors: pause is then disabled and drops follow",
    }),
    # --- port gauges
    "port_state": MetricSpec("port_state", G, "code", "IB port state: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE"),
    "phys_state": MetricSpec("phys_state", G, "code", "physical state: 2 Polling, 3 Disabled, 5 LinkUp"),
    "rate_gbps": MetricSpec("rate_gbps", G, "Gb/s", "trained link rate"),
    "qp_count": MetricSpec("qp_count", G, "QPs", "queue pairs on the device"),
    # --- rates derived by fabric.rates (gauges)
    **_specs(G, "Gb/s", {
        "tx_gbps": "transmit throughput",
        "rx_gbps": "receive throughput",
    }),
    **_specs(G, "1/s", {
        "rx_pause_per_s": "PFC pause frames received per second",
        "tx_pause_per_s": "PFC pause frames sent per second",
        "cnp_sent_per_s": "CNPs sent per second",
        "cnp_handled_per_s": "CNPs handled per second",
        "ecn_marked_per_s": "ECN-marked packets received per second",
        "errors_per_s": "sum of error counters per second",
    }),
    "pre_fec_ber": MetricSpec("pre_fec_ber", G, "ratio", "corrected bits / received bits over the interval"),
    # --- optics (ethtool -m)
    **_specs(G, "dBm", {
        "optics_rx_power_dbm": "receive power per lane",
        "optics_tx_power_dbm": "transmit power per lane",
    }),
    "optics_tx_bias_ma": MetricSpec("optics_tx_bias_ma", G, "mA", "laser bias current per lane"),
    "optics_temp_c": MetricSpec("optics_temp_c", G, "C", "module temperature"),
    "optics_voltage_v": MetricSpec("optics_voltage_v", G, "V", "module supply voltage"),
    # --- optics thresholds, the module's own (EEPROM, SFF-8636 / CMIS), per NIC
    **{f"optics_{quantity}_{level}_{suffix}": MetricSpec(
        f"optics_{quantity}_{level}_{suffix}", G, unit, f"module's {text} {level.replace('_', ' ')} threshold")
       for quantity, suffix, unit, text in (("rx_power", "dbm", "dBm", "Rx power"), ("tx_power", "dbm", "dBm", "Tx power"),
                                            ("tx_bias", "ma", "mA", "laser bias"), ("temp", "c", "C", "temperature"))
       for level in ("low_alarm", "low_warning", "high_warning", "high_alarm")},
    # --- GPU (NVML)
    "gpu_util_pct": MetricSpec("gpu_util_pct", G, "%", "SM utilization"),
    "gpu_mem_used_bytes": MetricSpec("gpu_mem_used_bytes", G, "bytes", "framebuffer memory used"),
    "gpu_mem_total_bytes": MetricSpec("gpu_mem_total_bytes", G, "bytes", "framebuffer memory total"),
    "gpu_temp_c": MetricSpec("gpu_temp_c", G, "C", "GPU core temperature"),
    "gpu_power_w": MetricSpec("gpu_power_w", G, "W", "board power draw"),
    "gpu_sm_clock_mhz": MetricSpec("gpu_sm_clock_mhz", G, "MHz", "SM clock"),
    "gpu_throttle_reasons": MetricSpec("gpu_throttle_reasons", G, "bitmask", "NVML clocks event reasons"),
    "gpu_xid_last": MetricSpec("gpu_xid_last", G, "code", "most recent XID (0: none)"),
    **_specs(E, "events", {
        "gpu_xid_count": "XID events seen",
        "gpu_ecc_volatile_uncorrected": "uncorrected ECC errors since driver load",
        "gpu_ecc_aggregate_uncorrected": "uncorrected ECC errors, lifetime",
        "gpu_ecc_volatile_corrected": "corrected ECC errors since driver load",
        "gpu_retired_pages": "retired or remapped memory rows",
        "gpu_pcie_replay": "PCIe replay counter",
        "gpu_nvlink_crc_errors": "NVLink CRC errors, all links",
        "gpu_nvlink_replay_errors": "NVLink replay errors, all links",
        "gpu_nvlink_recovery_errors": "NVLink recovery errors, all links",
    }),
    # --- switch ports
    **_specs(C, "bytes", {
        "sw_rx_bytes": "bytes received on the switch port",
        "sw_tx_bytes": "bytes sent on the switch port",
    }),
    **_specs(E, "packets", {
        "sw_rx_drops": "packets dropped on receive",
        "sw_tx_drops": "packets dropped on transmit",
        "sw_rx_errors": "frames received with errors (FCS, symbol): the far end's transmitter or the cable",
    }),
    "sw_carrier_transitions": MetricSpec("sw_carrier_transitions", E, "events",
                                         "link state changes of the switch port (two per flap)"),
    **_specs(C, "frames", {
        "sw_rx_pfc_pause": "PFC pause frames received (priority 3)",
        "sw_tx_pfc_pause": "PFC pause frames sent (priority 3)",
    }),
    "sw_ecn_marked": MetricSpec("sw_ecn_marked", C, "packets", "packets ECN-marked by the switch"),
    "sw_oper_up": MetricSpec("sw_oper_up", G, "bool", "1 when the port is operationally up"),
    **_specs(G, "Gb/s", {"sw_rx_gbps": "switch port receive throughput", "sw_tx_gbps": "switch port transmit throughput"}),
    "sw_util_pct": MetricSpec("sw_util_pct", G, "%", "max(rx, tx) throughput over port speed"),
    # --- host
    "host_up": MetricSpec("host_up", G, "bool", "1 when the last collection succeeded"),
    "collect_seconds": MetricSpec("collect_seconds", G, "s", "time one collection took"),
}
