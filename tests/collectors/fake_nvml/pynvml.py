"""A stand-in ``pynvml`` for the node agent's tests: the REAL module with the driver calls replaced.

Put this folder first on PYTHONPATH and name the real module's file in
``FLEET_REAL_PYNVML``. Everything (constants, structures, error classes) comes
from the real nvidia-ml-py; only the functions that would call libnvidia-ml
are replaced. They return the real ctypes structures (``c_nvmlMemory_t``,
``c_nvmlUtilization_t``, ``c_nvmlEventData_t``) and raise the real
``NVMLError`` subclasses, as the library does. ``FAKE_NVML_SCENARIO``:

- ``h100``: two GPUs; gpu0 supports everything, has 18 NVLinks and one pending
  XID 79; gpu1 supports no ECC, NVLink, remapped rows or XID events (NOT_SUPPORTED)
  but has retired pages.
- ``lost``: as h100, but gpu1 falls off the bus (GPU_IS_LOST) when read.
- ``no_driver``: nvmlInit raises DRIVER_NOT_LOADED.
- ``no_library``: nvmlInit raises LIBRARY_NOT_FOUND.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
from typing import Any

_spec = importlib.util.spec_from_file_location("_real_pynvml", os.environ["FLEET_REAL_PYNVML"])
assert _spec is not None and _spec.loader is not None
_real = importlib.util.module_from_spec(_spec)
sys.modules["_real_pynvml"] = _real  # the real module looks itself up there to make its error classes
_spec.loader.exec_module(_real)
globals().update({name: value for name, value in vars(_real).items() if not name.startswith("__")})

SCENARIO = os.environ.get("FAKE_NVML_SCENARIO", "h100")
_devices = [_real.struct_c_nvmlDevice_t(), _real.struct_c_nvmlDevice_t()]
_handles = [ctypes.pointer(device) for device in _devices]
_pending_xids = [(0, 79)]


def _index(handle: Any) -> int:
    address = ctypes.addressof(handle.contents)
    for index, device in enumerate(_devices):
        if ctypes.addressof(device) == address:
            return index
    raise _real.NVMLError_InvalidArgument()


def _supported(handle: Any) -> int:
    """The GPU's index; raises as the real library would for gpu1's gaps and a lost GPU."""
    index = _index(handle)
    if SCENARIO == "lost" and index == 1:
        raise _real.NVMLError_GpuIsLost()
    return index


def _full_only(handle: Any) -> int:
    index = _supported(handle)
    if index == 1:
        raise _real.NVMLError_NotSupported()
    return index


def nvmlInit() -> None:
    if SCENARIO == "no_driver":
        raise _real.NVMLError_DriverNotLoaded()
    if SCENARIO == "no_library":
        raise _real.NVMLError_LibraryNotFound()


def nvmlDeviceGetCount() -> int:
    return len(_handles)


def nvmlDeviceGetHandleByIndex(index: int) -> Any:
    return _handles[index]


def nvmlDeviceGetIndex(handle: Any) -> int:
    return _index(handle)


def nvmlDeviceGetName(handle: Any) -> str:
    _supported(handle)
    return "NVIDIA H100 80GB HBM3"


def nvmlDeviceGetUUID(handle: Any) -> str:
    return f"GPU-00000000-0000-0000-0000-00000000000{_supported(handle)}"


def nvmlDeviceGetUtilizationRates(handle: Any) -> Any:
    return _real.c_nvmlUtilization_t(gpu=97 - _supported(handle), memory=41)


def nvmlDeviceGetMemoryInfo(handle: Any, version: Any = None) -> Any:
    _supported(handle)
    total = 85_520_809_984
    used = 81_004_429_312
    return _real.c_nvmlMemory_t(total=total, free=total - used, used=used)


def nvmlDeviceGetTemperature(handle: Any, sensor: int) -> int:
    assert sensor == _real.NVML_TEMPERATURE_GPU
    return 61 + _supported(handle)


def nvmlDeviceGetPowerUsage(handle: Any) -> int:
    _supported(handle)
    return 612_412  # milliwatts


def nvmlDeviceGetClockInfo(handle: Any, clock: int) -> int:
    assert clock == _real.NVML_CLOCK_SM
    _supported(handle)
    return 1980


def nvmlDeviceGetCurrentClocksEventReasons(handle: Any) -> int:
    return _real.nvmlClocksEventReasonSwThermalSlowdown if _supported(handle) == 0 else 0


def nvmlDeviceGetTotalEccErrors(handle: Any, error_type: int, counter_type: int) -> int:
    _full_only(handle)
    if error_type == _real.NVML_MEMORY_ERROR_TYPE_CORRECTED:
        return 12
    return 2 if counter_type == _real.NVML_VOLATILE_ECC else 5


def nvmlDeviceGetRemappedRows(handle: Any) -> tuple[int, int, int, int]:
    _full_only(handle)
    return (1, 2, 0, 0)


def nvmlDeviceGetRetiredPages(handle: Any, cause: int) -> list[int]:
    _supported(handle)
    return [0x1000, 0x2000] if cause == _real.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR else [0x3000]


def nvmlDeviceGetPcieReplayCounter(handle: Any) -> int:
    return 3 * (_supported(handle) + 1)


def nvmlDeviceGetNvLinkState(handle: Any, link: int) -> int:
    _full_only(handle)
    if link >= 18:
        raise _real.NVMLError_InvalidArgument()
    return _real.NVML_FEATURE_ENABLED


def nvmlDeviceGetNvLinkErrorCounter(handle: Any, link: int, counter: int) -> int:
    _full_only(handle)
    per_link = {_real.NVML_NVLINK_ERROR_DL_CRC_FLIT: 2, _real.NVML_NVLINK_ERROR_DL_REPLAY: 1,
                _real.NVML_NVLINK_ERROR_DL_RECOVERY: 0}
    return per_link[counter] if link == 4 else 0


def nvmlEventSetCreate() -> Any:
    return ctypes.pointer(_real.struct_c_nvmlEventSet_t())


def nvmlDeviceRegisterEvents(handle: Any, event_types: int, event_set: Any) -> None:
    assert event_types == _real.nvmlEventTypeXidCriticalError
    _full_only(handle)


def nvmlEventSetWait_v2(event_set: Any, timeout_ms: int) -> Any:
    assert timeout_ms == 0, "the agent must never block on XID events"
    if not _pending_xids:
        raise _real.NVMLError_Timeout()
    index, xid = _pending_xids.pop(0)
    return _real.c_nvmlEventData_t(device=_handles[index], eventType=_real.nvmlEventTypeXidCriticalError,
                                   eventData=xid)
