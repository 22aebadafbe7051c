# SPDX-License-Identifier: Apache-2.0
"""Appended to the README's Python example by test_wheel.py and run in a fresh virtual environment
(only onnxruntime and the wheel installed): runs the session the README built on x.npy and prints
what the test compares, as JSON. Uses the README's names: ort, onebit, session."""

import ctypes
import json

import numpy as np

x = np.load("x.npy")
output = session.run(None, {session.get_inputs()[0].name: x})[0]  # noqa: F821 (the README's session)
devices = onebit.register()  # noqa: F821 -- a second call must not register again
library = ctypes.CDLL(onebit.get_library_path())  # noqa: F821 -- the file ORT loaded: same handle
library.OnebitEp_Version.restype = ctypes.c_char_p
print(
    json.dumps(
        {
            "output": output.tolist(),
            "dtype": str(output.dtype),
            "providers": session.get_providers(),  # noqa: F821
            "ort_version": ort.__version__,  # noqa: F821
            "package_version": onebit.__version__,  # noqa: F821
            "library_version": library.OnebitEp_Version().decode(),
            "library_api": library.OnebitEp_OrtApiVersion(),
            "min_ort_version": list(onebit.MIN_ORT_VERSION),  # noqa: F821
            "library_path": onebit.get_library_path(),  # noqa: F821
            "ep_names": onebit.get_ep_names(),  # noqa: F821
            "ep_name": onebit.get_ep_name(),  # noqa: F821
            "devices": [
                {
                    "ep_name": d.ep_name,
                    "vendor": d.ep_vendor,
                    "metadata": dict(d.ep_metadata),
                    "type": str(d.device.type),
                }
                for d in devices
            ],
        }
    )
)
del session  # noqa: F821 -- released now, the EP prints its trace line ("trace": "1" in the README)
