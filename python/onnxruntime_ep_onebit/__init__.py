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

import importlib.metadata
import pathlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import onnxruntime

__all__ = ["MIN_ORT_VERSION", "REGISTRATION_NAME", "__version__", "get_ep_name", "get_ep_names",
           "get_library_path", "register"]

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
        raise RuntimeError(f"onnxruntime-ep-onebit {__version__} needs onnxruntime {needed} or newer "
                           f"(ORT API {MIN_ORT_VERSION[1]}); this process has onnxruntime {version}: "
                           f"pip install -U onnxruntime")


def register(registration_name: str = REGISTRATION_NAME) -> list[onnxruntime.OrtEpDevice]:
    """Registers the EP library with onnxruntime (once per process) and returns its EP devices,
    ready for ``SessionOptions.add_provider_for_devices``. Checks the onnxruntime version first."""
    import onnxruntime as ort

    _check_ort_version(ort.__version__)

    def ours() -> list[onnxruntime.OrtEpDevice]:
        return [d for d in ort.get_ep_devices() if d.ep_name in get_ep_names()]

    if not ours():  # registered already, by this call or by the application, under any name
        ort.register_execution_provider_library(registration_name, get_library_path())
    devices = ours()
    if not devices:
        raise RuntimeError(f"{get_library_path()} registered, but onnxruntime {ort.__version__} lists no "
                           f"{_EP_NAME} device")
    return devices
