"""``ethtool -S``, ``ethtool -m`` and ``ethtool <netdev>`` of a simulated mlx5 netdev.

``ethtool -S`` prints ``NicView.ethtool`` in its (driver) order under the
``NIC statistics:`` header with ethtool's five-space indent. The model fills that
dict from ``mlx5_ethtool_counter_names()``, the counter list of the kernel's
mlx5 driver (drivers/net/ethernet/mellanox/mlx5/core/en_stats.c, group order of
``mlx5e_nic_stats_grps``). The per-channel blocks (``ch0_*``, ``rx0_*``,
``tx0_*``) that follow the ``pme`` group on a real NIC are left out, as in the
excerpt tests/fixtures/ethtool/ethq-mlx5-cx4-ethtool-S-kernel4.15.txt.

``ethtool -m`` follows ethtool's ``qsfp.c`` (SFF-8636, QSFP+/QSFP28) and
``cmis.c`` (CMIS 4/5, QSFP-DD/OSFP; the ethtool 6.x layout with the lane
signal lines and the flags channel by channel, as in a CMIS 4.0 capture posted
to netdev in 2024 with an ethtool JSON RFC) with its ``%-41s : `` labels, the
register quantization (0.1 uW, 2 uA, 1/256 C, 100 uV) and ``mW / dBm`` pairs
(``-inf dBm`` for a dark lane).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence

from fleet.simulator.state import NicView, OpticsLane, OpticsView
from fleet.simulator.tools import ToolContext, ToolOutput, register

# --- counter names -------------------------------------------------------------

_SW = [
    "rx_packets",
    "rx_bytes",
    "tx_packets",
    "tx_bytes",
    "tx_tso_packets",
    "tx_tso_bytes",
    "tx_tso_inner_packets",
    "tx_tso_inner_bytes",
    "tx_added_vlan_packets",
    "tx_nop",
    "tx_mpwqe_blks",
    "tx_mpwqe_pkts",
    "tx_tls_encrypted_packets",
    "tx_tls_encrypted_bytes",
    "tx_tls_ooo",
    "tx_tls_dump_packets",
    "tx_tls_dump_bytes",
    "tx_tls_resync_bytes",
    "tx_tls_skip_no_sync_data",
    "tx_tls_drop_no_sync_data",
    "tx_tls_drop_bypass_req",
    "rx_lro_packets",
    "rx_lro_bytes",
    "rx_gro_packets",
    "rx_gro_bytes",
    "rx_gro_skbs",
    "rx_gro_match_packets",
    "rx_gro_large_hds",
    "rx_ecn_mark",
    "rx_removed_vlan_packets",
    "rx_csum_unnecessary",
    "rx_csum_none",
    "rx_csum_complete",
    "rx_csum_complete_tail",
    "rx_csum_complete_tail_slow",
    "rx_csum_unnecessary_inner",
    "rx_xdp_drop",
    "rx_xdp_redirect",
    "rx_xdp_tx_xmit",
    "rx_xdp_tx_mpwqe",
    "rx_xdp_tx_inlnw",
    "rx_xdp_tx_nops",
    "rx_xdp_tx_full",
    "rx_xdp_tx_err",
    "rx_xdp_tx_cqe",
    "tx_csum_none",
    "tx_csum_partial",
    "tx_csum_partial_inner",
    "tx_queue_stopped",
    "tx_queue_dropped",
    "tx_xmit_more",
    "tx_recover",
    "tx_cqes",
    "tx_queue_wake",
    "tx_cqe_err",
    "tx_xdp_xmit",
    "tx_xdp_mpwqe",
    "tx_xdp_inlnw",
    "tx_xdp_nops",
    "tx_xdp_full",
    "tx_xdp_err",
    "tx_xdp_cqes",
    "rx_wqe_err",
    "rx_mpwqe_filler_cqes",
    "rx_mpwqe_filler_strides",
    "rx_oversize_pkts_sw_drop",
    "rx_buff_alloc_err",
    "rx_cqe_compress_blks",
    "rx_cqe_compress_pkts",
    "rx_cache_reuse",
    "rx_cache_full",
    "rx_cache_empty",
    "rx_cache_busy",
    "rx_cache_waive",
    "rx_congst_umr",
    "rx_arfs_err",
    "rx_recover",
    "rx_tls_decrypted_packets",
    "rx_tls_decrypted_bytes",
    "rx_tls_resync_req_pkt",
    "rx_tls_resync_req_start",
    "rx_tls_resync_req_end",
    "rx_tls_resync_req_skip",
    "rx_tls_resync_res_ok",
    "rx_tls_resync_res_retry",
    "rx_tls_resync_res_skip",
    "rx_tls_err",
    "ch_events",
    "ch_poll",
    "ch_arm",
    "ch_aff_change",
    "ch_force_irq",
    "ch_eq_rearm",
    "rx_xsk_packets",
    "rx_xsk_bytes",
    "rx_xsk_csum_complete",
    "rx_xsk_csum_unnecessary",
    "rx_xsk_csum_unnecessary_inner",
    "rx_xsk_csum_none",
    "rx_xsk_ecn_mark",
    "rx_xsk_removed_vlan_packets",
    "rx_xsk_xdp_drop",
    "rx_xsk_xdp_redirect",
    "rx_xsk_wqe_err",
    "rx_xsk_mpwqe_filler_cqes",
    "rx_xsk_mpwqe_filler_strides",
    "rx_xsk_oversize_pkts_sw_drop",
    "rx_xsk_buff_alloc_err",
    "rx_xsk_cqe_compress_blks",
    "rx_xsk_cqe_compress_pkts",
    "rx_xsk_congst_umr",
    "rx_xsk_arfs_err",
    "tx_xsk_xmit",
    "tx_xsk_mpwqe",
    "tx_xsk_inlnw",
    "tx_xsk_full",
    "tx_xsk_err",
    "tx_xsk_cqes",
]
_QCNT = ("rx_out_of_buffer", "rx_if_down_packets")
_VNIC_ENV = ("rx_steer_missed_packets", "dev_internal_queue_oob")
_VPORT = tuple(
    f"{d}_vport_{kind}_{unit}"
    for kind in ("unicast", "multicast", "broadcast", "rdma_unicast", "rdma_multicast")
    for d in ("rx", "tx")
    for unit in ("packets", "bytes")
)
_802_3 = [
    "tx_packets_phy",
    "rx_packets_phy",
    "rx_crc_errors_phy",
    "tx_bytes_phy",
    "rx_bytes_phy",
    "tx_multicast_phy",
    "tx_broadcast_phy",
    "rx_multicast_phy",
    "rx_broadcast_phy",
    "rx_in_range_len_errors_phy",
    "rx_out_of_range_len_phy",
    "rx_oversize_pkts_phy",
    "rx_symbol_err_phy",
    "tx_mac_control_phy",
    "rx_mac_control_phy",
    "rx_unsupported_op_phy",
    "rx_pause_ctrl_phy",
    "tx_pause_ctrl_phy",
]
_2863 = ("rx_discards_phy", "tx_discards_phy", "tx_errors_phy")
_2819 = [
    "rx_undersize_pkts_phy",
    "rx_fragments_phy",
    "rx_jabbers_phy",
    "rx_64_bytes_phy",
    "rx_65_to_127_bytes_phy",
    "rx_128_to_255_bytes_phy",
    "rx_256_to_511_bytes_phy",
    "rx_512_to_1023_bytes_phy",
    "rx_1024_to_1518_bytes_phy",
    "rx_1519_to_2047_bytes_phy",
    "rx_2048_to_4095_bytes_phy",
    "rx_4096_to_8191_bytes_phy",
    "rx_8192_to_10239_bytes_phy",
]
# link_down_events_phy, then the PPCNT statistical group. rx_bits_phy is what
# MLNX_OFED (and the 2026 upstream RFC "net/mlx5e: Expose physical received bits
# counters to ethtool") adds after rx_corrected_bits_phy: the BER denominator.
_PHY = (
    "link_down_events_phy",
    "rx_pcs_symbol_err_phy",
    "rx_corrected_bits_phy",
    "rx_bits_phy",
    "rx_err_lane_0_phy",
    "rx_err_lane_1_phy",
    "rx_err_lane_2_phy",
    "rx_err_lane_3_phy",
)
_ETH_EXT = ("rx_buffer_passed_thres_phy",)
_PCIE = (
    "rx_pci_signal_integrity",
    "tx_pci_signal_integrity",
    "outbound_pci_buffer_overflow",
    "outbound_pci_stalled_rd",
    "outbound_pci_stalled_wr",
    "outbound_pci_stalled_rd_events",
    "outbound_pci_stalled_wr_events",
)
_PFC = (
    "rx_{p}_pause",
    "rx_{p}_pause_duration",
    "tx_{p}_pause",
    "tx_{p}_pause_duration",
    "rx_{p}_pause_transition",
)
_PME = ("module_unplug", "module_bus_stuck", "module_high_temp", "module_bad_shorted")


def mlx5_ethtool_counter_names(
    pfc_priorities: Iterable[int] = (3,), global_pause: bool = False
) -> tuple[str, ...]:
    """The ``ethtool -S`` names of a ConnectX-6 Dx/7 netdev, in the driver's order.

    ``pfc_priorities``: priorities with PFC enabled (RoCE usually 3); their
    ``rx_prioN_pause*`` counters exist only then. ``global_pause``: 802.3x pause
    on (adds ``*_global_pause*``). The model fills ``NicView.ethtool`` with these keys.
    """
    per_prio = [
        name.format(p=p)
        for p in range(8)
        for name in (
            "rx_prio{p}_bytes",
            "rx_prio{p}_packets",
            "rx_prio{p}_discards",
            "tx_prio{p}_bytes",
            "tx_prio{p}_packets",
        )
    ]
    pfc = [name.format(p=f"prio{p}") for p in sorted(set(pfc_priorities)) for name in _PFC]
    if global_pause:
        pfc += [name.format(p="global") for name in _PFC]
    stall = ["tx_pause_storm_warning_events", "tx_pause_storm_error_events"]
    congest = [
        name.format(p=p)
        for p in range(8)
        for name in ("rx_prio{p}_buf_discard", "rx_prio{p}_cong_discard", "rx_prio{p}_marked")
    ]
    return (
        *_SW,
        *_QCNT,
        *_VNIC_ENV,
        *_VPORT,
        *_802_3,
        *_2863,
        *_2819,
        *_PHY,
        *_ETH_EXT,
        *_PCIE,
        *per_prio,
        *pfc,
        *stall,
        *_PME,
        *congest,
    )


# --- command line ----------------------------------------------------------------

_USAGE_HINT = "ethtool: bad command line argument(s)\nFor more information run ethtool -h\n"


def _find_nic(ctx: ToolContext, netdev: str) -> NicView | None:
    if ctx.node is None:
        return None
    return next((n for n in ctx.node.nics if n.netdev == netdev), None)


def _module_info(ctx: ToolContext, netdev: str) -> ToolOutput:
    """``ethtool -m DEV``: from the node's parts when the context has them, only that NIC's module
    read (a link test reads all 8 modules of 128 nodes while its probes run), else from the view."""
    parts = ctx.parts
    optics: OpticsView | None
    if parts is not None:
        rail = parts.rail_of(netdev)
        found, optics = rail is not None, (parts.optics(rail) if rail is not None else None)
    else:
        nic = _find_nic(ctx, netdev)
        found, optics = nic is not None, (nic.optics if nic is not None else None)
    if not found:
        return ToolOutput("", "netlink error: no device matches name (offset 24)\nnetlink error: No such device\n", 1)
    if optics is None:
        return ToolOutput("", "netlink error: Input/output error\n", 1)
    return ToolOutput(render_module(optics))


@register("ethtool")
def ethtool(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``ethtool -S DEV``, ``ethtool -m DEV`` (also ``--statistics``, ``--module-info``), ``ethtool DEV``."""
    if ctx.parts is None and ctx.node is None:  # parts: no whole view built to ask
        return ToolOutput("", f"sh: 1: {argv[0]}: not found\n", 127)
    args = argv[1:]
    if len(args) == 2 and args[0] in ("-m", "--dump-module-eeprom", "--module-info"):
        return _module_info(ctx, args[1])
    if len(args) == 2 and args[0] in ("-S", "--statistics"):
        nic = _find_nic(ctx, args[1])
        if nic is None:
            return ToolOutput("", "Cannot get stats strings information: No such device\n", 96)
        if not nic.ethtool:
            return ToolOutput("", "no stats available\n", 94)
        body = "".join(f"     {name}: {value}\n" for name, value in nic.ethtool.items())
        return ToolOutput("NIC statistics:\n" + body)
    if len(args) == 1 and not args[0].startswith("-"):
        nic = _find_nic(ctx, args[0])
        if nic is None:
            return ToolOutput(
                "",
                "netlink error: no device matches name (offset 24)\nnetlink error: No such device\n"
                "netlink error: no device matches name (offset 24)\nnetlink error: No such device\n"
                "No data available\n",
                75,
            )
        return ToolOutput(_link_settings(nic))
    return ToolOutput("", _USAGE_HINT, 1)


# --- ethtool DEV ---------------------------------------------------------------------


def _link_modes(rate_gbps: int, lanes: int) -> list[str]:
    """The CR/KR/SR/DR link modes of one speed, as ethtool names them ("400000baseSR4/Full")."""
    suffix = str(lanes) if lanes > 1 else ""
    kinds = ("KR", "SR", "CR", "DR") if rate_gbps >= 100 else ("KR", "SR", "CR")
    return [f"{rate_gbps * 1000}base{kind}{suffix}/Full" for kind in kinds]


def _link_settings(nic: NicView) -> str:
    """``ethtool DEV`` (ethtool.c dump_link_usettings; links modes aligned at column 33)."""
    lanes = int("".join(c for c in nic.width if c.isdigit()) or "1")
    modes = _link_modes(nic.rate_gbps, lanes)
    pad = "\t" + " " * 24
    up = nic.state == "ACTIVE"
    lines = [
        f"Settings for {nic.netdev}:",
        "\tSupported ports: [ FIBRE ]",
        "\tSupported link modes:   " + f"\n{pad}".join(modes),
        "\tSupported pause frame use: Symmetric",
        "\tSupports auto-negotiation: Yes",
        "\tSupported FEC modes: None\t RS\t LLRS",
        "\tAdvertised link modes:  " + f"\n{pad}".join(modes),
        "\tAdvertised pause frame use: Symmetric",
        "\tAdvertised auto-negotiation: Yes",
        "\tAdvertised FEC modes: RS",
        "\tLink partner advertised link modes:  Not reported",
        "\tLink partner advertised pause frame use: No",
        "\tLink partner advertised auto-negotiation: Yes",
        "\tLink partner advertised FEC modes: Not reported",
        f"\tSpeed: {nic.rate_gbps * 1000}Mb/s" if up else "\tSpeed: Unknown!",
        f"\tLanes: {lanes}" if up else "\tLanes: Unknown!",
        "\tDuplex: Full" if up else "\tDuplex: Unknown! (255)",
        "\tAuto-negotiation: on",
        "\tPort: FIBRE",
        "\tPHYAD: 0",
        "\tTransceiver: internal",
        "\tSupports Wake-on: d",
        "\tWake-on: d",
        "        Current message level: 0x00000004 (4)",
        "                               link",
        f"\tLink detected: {'yes' if up else 'no'}",
    ]
    return "".join(line + "\n" for line in lines)


# --- ethtool -m ------------------------------------------------------------------------

_IDENTIFIERS = {
    0x0D: "QSFP+",
    0x11: "QSFP28",
    0x18: "QSFP-DD Double Density 8X Pluggable Transceiver (INF-8628)",
    0x19: "OSFP 8X Pluggable Transceiver",
    0x1E: "QSFP+ or later with Common Management Interface Specification (CMIS)",
}
CMIS_IDS = (0x18, 0x19, 0x1E)


def identifier_byte(optics: OpticsView) -> int:
    """SFF-8024 identifier of the module from ``OpticsView.identifier`` ("0x18 (...)")."""
    head = optics.identifier.split()[0] if optics.identifier else "0x18"
    try:
        return int(head, 16)
    except ValueError:
        return 0x18


def module_row(label: str, value: str) -> str:
    return f"\t{label:<41} : {value}\n"


def _mw(value_mw: float) -> float:
    """Optical power as the module registers hold it: units of 0.1 uW."""
    return round(max(value_mw, 0.0) * 10000) / 10000


def power_text(value_mw: float) -> str:
    """PRINT_xX_PWR: "1.0778 mW / 0.33 dBm"; a dark lane reads "0.0000 mW / -inf dBm"."""
    mw = _mw(value_mw)
    dbm = 10 * math.log10(mw) if mw > 0 else -math.inf
    return f"{mw:.4f} mW / {dbm:.2f} dBm"


def _dbm_to_mw(dbm: float) -> float:
    return 10 ** (dbm / 10)


def bias_text(ma: float) -> str:
    """PRINT_BIAS: registers hold 2 uA units."""
    return f"{round(max(ma, 0.0) / 0.002) * 0.002:.3f} mA"


def temp_text(celsius: float) -> str:
    """PRINT_TEMP: 1/256 degree registers, Celsius and Fahrenheit."""
    c = round(celsius * 256) / 256
    return f"{c:.2f} degrees C / {c * 1.8 + 32:.2f} degrees F"


def volt_text(volts: float) -> str:
    """PRINT_VCC: 100 uV registers."""
    return f"{round(volts * 10000) / 10000:.4f} V"


def _flags(
    value: float, thresholds: tuple[float, float, float, float]
) -> tuple[bool, bool, bool, bool]:
    """(high alarm, low alarm, high warning, low warning) as the module latches them."""
    high_alarm, low_alarm, high_warn, low_warn = thresholds
    return value > high_alarm, value < low_alarm, value > high_warn, value < low_warn


def _onoff(flag: bool) -> str:
    return "On" if flag else "Off"


def _lane_dbm(value_mw: float) -> float:
    mw = _mw(value_mw)
    return 10 * math.log10(mw) if mw > 0 else -math.inf


_FLAG_KINDS = ("high alarm", "low alarm", "high warning", "low warning")
_LANE_FLAG_KINDS = ("high alarm  ", "low alarm   ", "high warning", "low warning ")
"""A lane's flags are padded to one width in ethtool's labels, the module's are not."""


def _thresholds(optics: OpticsView) -> str:
    """sff_show_thresholds(): bias, Tx power, temperature, voltage, Rx power; HA, LA, HW, LW each."""
    return _threshold_rows(optics.bias_thresholds_ma, optics.tx_power_thresholds_dbm, optics.temp_thresholds_c,
                           optics.voltage_thresholds_v, optics.rx_power_thresholds_dbm)


Thresholds = tuple[float, float, float, float]


@functools.lru_cache(maxsize=256)
def _threshold_rows(bias_ma: Thresholds, tx_dbm: Thresholds, temp_c: Thresholds, volts: Thresholds,
                    rx_dbm: Thresholds) -> str:
    """The thresholds' 20 rows, made once per module type (its thresholds are fixed)."""
    kinds = _FLAG_KINDS
    out = [module_row(f"Laser bias current {k} threshold", bias_text(v)) for k, v in zip(kinds, bias_ma, strict=True)]
    out += [
        module_row(f"Laser output power {k} threshold", power_text(_dbm_to_mw(v)))
        for k, v in zip(kinds, tx_dbm, strict=True)
    ]
    out += [module_row(f"Module temperature {k} threshold", temp_text(v)) for k, v in zip(kinds, temp_c, strict=True)]
    out += [module_row(f"Module voltage {k} threshold", volt_text(v)) for k, v in zip(kinds, volts, strict=True)]
    out += [
        module_row(f"Laser rx power {k} threshold", power_text(_dbm_to_mw(v)))
        for k, v in zip(kinds, rx_dbm, strict=True)
    ]
    return "".join(out)


def _module_flags(optics: OpticsView) -> str:
    return _flag_rows("Module temperature {}", _flags(optics.temp_c, optics.temp_thresholds_c)) + _flag_rows(
        "Module voltage {}", _flags(optics.voltage_v, optics.voltage_thresholds_v)
    )


@functools.cache
def _flag_rows(label: str, flags: tuple[bool, bool, bool, bool], kinds: tuple[str, ...] = _FLAG_KINDS) -> str:
    """One reading's four alarm/warning rows (``label`` with a ``{}`` for the kind): the same few
    texts for every module, made once rather than 100 rows a module."""
    return "".join(module_row(label.format(k), _onoff(f)) for k, f in zip(kinds, flags, strict=True))


def _bias_flag_rows(index: int, lane: OpticsLane, optics: OpticsView) -> str:
    flags = _flags(lane.tx_bias_ma, optics.bias_thresholds_ma)
    return _flag_rows(f"Laser bias current {{}} (Chan {index})", flags, _LANE_FLAG_KINDS)


def _power_flag_rows(kind: str, index: int, value_mw: float, thresholds: Thresholds) -> str:
    flags = _flags(_lane_dbm(value_mw), thresholds)
    return _flag_rows(f"Laser {kind} power {{}} (Channel {index})", flags, _LANE_FLAG_KINDS)


def _is_multimode(optics: OpticsView) -> bool:
    """SR optics (850 nm VCSEL over multimode fibre) by part number; DR/FR/LR are single mode."""
    pn = optics.vendor_pn.upper()
    return "SR" in pn or pn.startswith("MMA")


def render_module(optics: OpticsView) -> str:
    """The whole ``ethtool -m`` text of one module (CMIS or SFF-8636 by identifier)."""
    ident = identifier_byte(optics)
    if ident in CMIS_IDS:
        return _render_cmis(optics, ident)
    return _render_sff8636(optics, ident)


def _render_cmis(optics: OpticsView, ident: int) -> str:
    multimode = _is_multimode(optics)
    # cmis.c prints every channel of each bank of page 11h: 8 per bank; unused lanes read 0.
    channels = max(8, -(-len(optics.lanes) // 8) * 8)
    lanes = list(optics.lanes) + [OpticsLane(0.0, 0.0, 0.0)] * (channels - len(optics.lanes))
    out = [
        module_row("Identifier", f"0x{ident:02x} ({_IDENTIFIERS.get(ident, 'reserved or unknown')})"),
        module_row("Power class", "5" if len(optics.lanes) > 4 else "4"),
        module_row("Max power", "10.00W" if len(optics.lanes) > 4 else "8.50W"),
        module_row("Connector", "0x0c (MPO Parallel Optic)"),
        module_row("Cable assembly length", "0.00m"),
        module_row("Tx CDR bypass control", "No"),
        module_row("Rx CDR bypass control", "No"),
        module_row("Tx CDR", "Yes"),
        module_row("Rx CDR", "Yes"),
        module_row(
            "Transmitter technology", "0x00 (850 nm VCSEL)" if multimode else "0x06 (1310 nm EML)"
        ),
        module_row("Laser wavelength", "850.000nm" if multimode else "1310.000nm"),
        module_row("Laser wavelength tolerance", "10.000nm" if multimode else "6.500nm"),
        module_row("Length (SMF)", "0.00km" if multimode else "0.50km"),
        module_row("Length (OM5)", "0m"),
        module_row("Length (OM4)", "50m" if multimode else "0m"),
        module_row("Length (OM3 50/125um)", "30m" if multimode else "0m"),
        module_row("Length (OM2 50/125um)", "0m"),
        module_row("Vendor name", optics.vendor_name),
        module_row("Vendor OUI", "48:b0:2d"),
        module_row("Vendor PN", optics.vendor_pn),
        module_row("Vendor rev", "A6"),
        module_row("Vendor SN", optics.vendor_sn),
        module_row("Date code", "230820"),
        module_row("Revision compliance", "Rev. 5.0"),
        *_signal_rows(optics),
        module_row("Module State", "0x03 (ModuleReady)"),
        module_row("LowPwrAllowRequestHW", "On"),
        module_row("LowPwrRequestSW", "Off"),
        module_row("Module temperature", temp_text(optics.temp_c)),
        module_row("Module voltage", volt_text(optics.voltage_v)),
    ]
    out += _lane_readings(lanes, rx_label="Rcvr signal avg optical power (Channel {})")
    out.append(_module_flags(optics))
    for i, lane in enumerate(lanes, 1):
        out.append(_bias_flag_rows(i, lane, optics))
        out.append(_power_flag_rows("tx", i, lane.tx_power_mw, optics.tx_power_thresholds_dbm))
        out.append(_power_flag_rows("rx", i, lane.rx_power_mw, optics.rx_power_thresholds_dbm))
    out.append(_thresholds(optics))
    return "".join(out)


def _lane_status(name: str, flags: list[bool]) -> str:
    """module_show_lane_status(): "None", or one Yes/No per channel of the bank."""
    if not any(flags):
        return module_row(name, "None")
    cells = [
        f" {'Yes' if flag else 'No'}{',' if i < len(flags) - 1 else ' '}"
        for i, flag in enumerate(flags)
    ]
    return module_row(name, "[" + "".join(cells) + "]")


def _signal_rows(optics: OpticsView) -> list[str]:
    """cmis_show_signals(): loss of signal/lock per lane in use (dark unused lanes are masked)."""
    channels = max(8, -(-len(optics.lanes) // 8) * 8)
    rx_dark = [_mw(lane.rx_power_mw) == 0 for lane in optics.lanes] + [False] * (
        channels - len(optics.lanes)
    )
    tx_dark = [_mw(lane.tx_power_mw) == 0 for lane in optics.lanes] + [False] * (
        channels - len(optics.lanes)
    )
    return [
        _lane_status("Rx loss of signal", rx_dark),
        _lane_status("Tx loss of signal", tx_dark),
        _lane_status("Rx loss of lock", rx_dark),
        _lane_status("Tx loss of lock", tx_dark),
        _lane_status("Tx fault", [False] * channels),
    ]


def _render_sff8636(optics: OpticsView, ident: int) -> str:
    """qsfp.c layout, label for label as tests/fixtures/ethtool/cwdm4-ethtool-m-qsfp28-*."""
    lanes = list(optics.lanes)[:4] + [OpticsLane(0.0, 0.0, 0.0)] * max(0, 4 - len(optics.lanes))
    multimode = _is_multimode(optics)
    out = [
        module_row("Identifier", f"0x{ident:02x} ({_IDENTIFIERS.get(ident, 'reserved or unknown')})"),
        module_row("Extended identifier", "0xcc"),
        module_row("Extended identifier description", "3.5W max. Power consumption"),
        module_row("Extended identifier description", "CDR present in TX, CDR present in RX"),
        module_row("Extended identifier description", "High Power Class (> 3.5 W) not enabled"),
        module_row("Power set", "Off"),
        module_row("Power override", "On"),
        module_row("Connector", "0x0c (MPO Parallel Optic)" if multimode else "0x07 (LC)"),
        module_row("Transceiver codes", "0x80 0x00 0x00 0x00 0x00 0x00 0x00 0x00"),
        module_row(
            "Transceiver type",
            "100G Ethernet: 100G Base-SR4 or 25GBase-SR"
            if multimode
            else "100G Ethernet: 100G CWDM4 MSA with FEC",
        ),
        module_row("Encoding", "0x07 ((256B/257B (transcoded FEC-enabled data))"),
        module_row("BR, Nominal", "25500Mbps"),
        module_row("Rate identifier", "0x02"),
        module_row("Length (SMF,km)", "0km" if multimode else "2km"),
        module_row("Length (OM3 50um)", "70m" if multimode else "0m"),
        module_row("Length (OM2 50um)", "0m"),
        module_row("Length (OM1 62.5um)", "0m"),
        module_row("Length (Copper or Active cable)", "0m"),
        module_row(
            "Transmitter technology", "0x00 (850 nm VCSEL)" if multimode else "0x40 (1310 nm DFB)"
        ),
        module_row("Laser wavelength", "850.000nm" if multimode else "1301.000nm"),
        module_row("Laser wavelength tolerance", "10.000nm" if multimode else "6.500nm"),
        module_row("Vendor name", optics.vendor_name),
        module_row("Vendor OUI", "00:02:c9"),
        module_row("Vendor PN", optics.vendor_pn),
        module_row("Vendor rev", "A0"),
        module_row("Vendor SN", optics.vendor_sn),
        module_row("Date code", "230820"),
        module_row("Revision Compliance", "SFF-8636 Rev 2.5/2.6/2.7"),
        module_row("Module temperature", temp_text(optics.temp_c)),
        module_row("Module voltage", volt_text(optics.voltage_v)),
        module_row("Alarm/warning flags implemented", "Yes"),
    ]
    out += _lane_readings(lanes, rx_label="Rcvr signal avg optical power(Channel {})")
    for i, lane in enumerate(lanes, 1):
        out.append(_bias_flag_rows(i, lane, optics))
    out.append(_module_flags(optics))
    for i, lane in enumerate(lanes, 1):
        out.append(_power_flag_rows("tx", i, lane.tx_power_mw, optics.tx_power_thresholds_dbm))
    for i, lane in enumerate(lanes, 1):
        out.append(_power_flag_rows("rx", i, lane.rx_power_mw, optics.rx_power_thresholds_dbm))
    out.append(_thresholds(optics))
    return "".join(out)


def _lane_readings(lanes: Sequence[OpticsLane], *, rx_label: str) -> list[str]:
    """Bias, Tx and Rx power per channel, grouped by reading as ethtool prints them.

    ``rx_label``: CMIS prints ``power (Channel N)``, SFF-8636 ``power(Channel N)``.
    """
    return [
        *(module_row(f"Laser tx bias current (Channel {i})", bias_text(lane.tx_bias_ma)) for i, lane in enumerate(lanes, 1)),
        *(module_row(f"Transmit avg optical power (Channel {i})", power_text(lane.tx_power_mw))
          for i, lane in enumerate(lanes, 1)),
        *(module_row(rx_label.format(i), power_text(lane.rx_power_mw)) for i, lane in enumerate(lanes, 1)),
    ]
