# SPDX-License-Identifier: Apache-2.0
"""The onebit plugin execution provider for ONNX Runtime: int8 (A8W8) quantized MatMul.

This package holds only the EP library, ``libonebit_ep.so``; ONNX Runtime itself comes from
whichever onnxruntime package the application installed (1.24 or newer), as ORT's plugin-EP
packaging convention asks::

    import onnxruntime as ort, onnxruntime_ep_onebit as onebit
    so = ort.SessionOptions()
    so.add_provider_for_devices(onebit.register(), {})
    session = ort.InferenceSession("model.onnx", sess_options=so)
"""

from __future__ import annotations

import gc
import importlib.metadata
import pathlib
import threading
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import onnxruntime

__all__ = [
    "MIN_ORT_VERSION",
    "REGISTRATION_NAME",
    "__version__",
    "get_ep_name",
    "get_ep_names",
    "get_library_path",
    "register",
    "unregister",
]

# Equal to the library's version (its EP factory's GetVersion): both come from include/onebit_ep.h.
__version__: str = importlib.metadata.version("onnxruntime-ep-onebit")

# The library asks ORT for API 24, the lowest that has every call it makes (ORT 1.N serves API N).
MIN_ORT_VERSION: tuple[int, int] = (1, 24)

# The name register() registers the library under; any name works with ORT.
REGISTRATION_NAME = "onebit"

_EP_NAME = "OnebitExecutionProvider"
_LIBRARY_FILE = "libonebit_ep.so"


def get_library_path() -> str:
    """Absolute path of the EP library, for ``onnxruntime.register_execution_provider_library``."""
    path = pathlib.Path(__file__).resolve().parent / _LIBRARY_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: reinstall onnxruntime-ep-onebit")
    return str(path)


def get_ep_names() -> list[str]:
    """Names of the EPs the library provides, as ``OrtEpDevice.ep_name`` reports them."""
    return [_EP_NAME]


def get_ep_name() -> str:
    """The one EP the library provides."""
    return _EP_NAME


def _check_ort_version(version: str) -> None:
    """Raises RuntimeError unless `version` (an onnxruntime ``__version__``) is MIN_ORT_VERSION or newer."""
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        raise RuntimeError(f"onnxruntime-ep-onebit cannot read the onnxruntime version {version!r}") from None
    if (major, minor) < MIN_ORT_VERSION:
        needed = ".".join(map(str, MIN_ORT_VERSION))
        raise RuntimeError(
            f"onnxruntime-ep-onebit {__version__} needs onnxruntime {needed} or newer "
            f"(ORT API {MIN_ORT_VERSION[1]}); this process has onnxruntime {version}: "
            f"pip install -U onnxruntime"
        )


# The registration register() made (its name), and every EP device it handed out, held weakly: ORT
# frees the devices with the library, and a device used after that reads freed memory inside
# onnxruntime (a crash, or a std::bad_alloc), so unregister() refuses while one is alive.
_lock = threading.Lock()
_registered_as: str | None = None
_handed_out: weakref.WeakSet = weakref.WeakSet()


def register(registration_name: str = REGISTRATION_NAME) -> list[onnxruntime.OrtEpDevice]:
    """Registers the EP library with onnxruntime (once per process) and returns its EP devices,
    ready for ``SessionOptions.add_provider_for_devices``. Checks the onnxruntime version first.

    The devices (and sessions made with them) live only as long as the registration: unregister
    with :func:`unregister`, which refuses while a device it returned is alive, never with
    ``onnxruntime.unregister_execution_provider_library`` while devices or sessions live."""
    global _registered_as
    import onnxruntime as ort

    _check_ort_version(ort.__version__)

    def ours() -> list[onnxruntime.OrtEpDevice]:
        return [d for d in ort.get_ep_devices() if d.ep_name in get_ep_names()]

    with _lock:
        if not ours():  # registered already, by this call or by the application, under any name
            ort.register_execution_provider_library(registration_name, get_library_path())
            _registered_as = registration_name
        devices = ours()
        if not devices:
            raise RuntimeError(
                f"{get_library_path()} registered, but onnxruntime {ort.__version__} lists no {_EP_NAME} device"
            )
        _handed_out.update(devices)
    return devices


def unregister() -> None:
    """Unregisters the library register() registered. Raises RuntimeError, and keeps the
    registration, while an EP device register() returned is still referenced: drop every such
    device, and release every session made with one, first (ORT frees the devices with the
    library; a session must be released before it too). After this, register() registers again."""
    global _registered_as
    import onnxruntime as ort

    with _lock:
        if _registered_as is None:
            raise RuntimeError(
                "onnxruntime_ep_onebit.register() has not registered the EP library in this "
                "process: nothing to unregister"
            )
        gc.collect()  # devices held only by garbage cycles are not in use
        alive = len(_handed_out)
        if alive:
            raise RuntimeError(
                f"{alive} {_EP_NAME} device(s) returned by register() are still referenced: "
                "drop them (and release the sessions made with them) before unregister(); "
                "onnxruntime frees the devices with the library"
            )
        ort.unregister_execution_provider_library(_registered_as)
        _registered_as = None
