# SPDX-License-Identifier: Apache-2.0
"""The library's ORT version check at registration, against a simulated older ORT: CreateEpFactories
is called (as ORT calls it) with a fake OrtApiBase whose GetApi refuses the API version asked for.
The library must answer with an OrtStatus built through the oldest API (CreateStatus of API 1)
that names both versions -- never crash, never hand out a factory. test/package/test_old_ort.py
does the same with a real onnxruntime 1.23.2."""

from __future__ import annotations

import ctypes
import os

import pytest

ORT_NOT_IMPLEMENTED = 9  # OrtErrorCode in onnxruntime_c_api.h

GET_API = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint32)
GET_VERSION_STRING = ctypes.CFUNCTYPE(ctypes.c_void_p)  # a const char* we own (c_char_p would leak)
CREATE_STATUS = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)


class OrtApiBase(ctypes.Structure):
    _fields_ = [("GetApi", GET_API), ("GetVersionString", GET_VERSION_STRING)]


class FakeOrt:
    """An ORT that serves API versions up to `newest_api` (0: none at all). Its API table holds only
    CreateStatus, the first entry of OrtApi, which records what the library reports."""

    def __init__(self, version: str, newest_api: int):
        self._version = ctypes.create_string_buffer(version.encode())
        self.asked: list[int] = []
        self.statuses: list[tuple[int, str]] = []
        self._status = ctypes.c_int(0)  # any non-null address serves as the status handle
        self._create_status = CREATE_STATUS(self._record_status)
        self._api_table = (ctypes.c_void_p * 1)(ctypes.cast(self._create_status, ctypes.c_void_p))
        self._get_api = GET_API(lambda v: self._serve(v, newest_api))
        self._get_version = GET_VERSION_STRING(lambda: ctypes.addressof(self._version))
        self.base = OrtApiBase(self._get_api, self._get_version)

    def _serve(self, version: int, newest_api: int):
        self.asked.append(version)
        return ctypes.addressof(self._api_table) if 1 <= version <= newest_api else None

    def _record_status(self, code: int, message: bytes):
        self.statuses.append((code, message.decode()))
        return ctypes.addressof(self._status)


@pytest.fixture(scope="module")
def library():
    path = os.environ.get("ONEBIT_EP_LIB")
    if not path or not os.path.isfile(path):
        pytest.fail("set ONEBIT_EP_LIB to the built libonebit_ep.so (scripts/test.sh does)")
    lib = ctypes.CDLL(path)
    lib.CreateEpFactories.restype = ctypes.c_void_p
    lib.CreateEpFactories.argtypes = [
        ctypes.c_char_p,
        ctypes.POINTER(OrtApiBase),
        ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_void_p),
        ctypes.c_size_t,
        ctypes.POINTER(ctypes.c_size_t),
    ]
    lib.OnebitEp_Version.restype = ctypes.c_char_p
    return lib


def create_factories(library, ort: FakeOrt):
    factories = (ctypes.c_void_p * 1)()
    count = ctypes.c_size_t(7)  # must come back 0
    status = library.CreateEpFactories(b"onebit", ctypes.byref(ort.base), None, factories, 1, ctypes.byref(count))
    return status, count.value, factories[0]


def test_an_ort_older_than_the_needed_api_gets_a_status_naming_both_versions(library):
    needed = library.OnebitEp_OrtApiVersion()
    ort = FakeOrt("1.23.2", newest_api=needed - 1)
    status, count, factory = create_factories(library, ort)
    assert ort.asked == [needed, 1], ort.asked  # the needed API, then the oldest for CreateStatus
    assert status == ctypes.addressof(ort._status) and count == 0 and factory is None
    version = library.OnebitEp_Version().decode()
    assert ort.statuses == [
        (
            ORT_NOT_IMPLEMENTED,
            f"onebit: OnebitExecutionProvider {version} needs ORT 1.{needed} "
            f"or newer (ORT API {needed}); this process runs ORT 1.23.2",
        )
    ]


def test_an_ort_serving_no_api_at_all_gets_no_factory_and_no_crash(library):
    ort = FakeOrt("0.0.0", newest_api=0)
    status, count, factory = create_factories(library, ort)
    assert status is None and count == 0 and factory is None
    assert ort.statuses == []


def test_the_needed_api_is_24(library):
    """Lowest API with every call the library makes (GetTensorElementTypeAndShapeDataReference and
    OrtEp::IsConcurrentRunSupported are 1.24): the supported range the README states."""
    assert library.OnebitEp_OrtApiVersion() == 24
