# SPDX-License-Identifier: Apache-2.0
"""The fp32 decoder to A8W8 QDQ with onnxruntime.quantization.quantize_static.

Only the constant-weight projections are quantized (`llama_onnx.projection_nodes`): int8 weights
per output channel, activations per tensor (asymmetric, MinMax over the calibration prompts).
uint8 activations (the default) are the combination ORT's own CPU EP has its fastest kernel for on
x86, so the comparison against it is fair. int8 activations are what many A8W8 exports write; ORT's
CPU EP on x86 fuses only the groups whose int8 QuantizeLinear feeds a single DequantizeLinear and
runs the others as DequantizeLinear + float MatMul. The onebit EP claims both. Attention has no
MatMul for the quantizer to see: it is one float GroupQueryAttention node a layer (llama_onnx.py).
"""

from __future__ import annotations

from gguf_llama import LlamaConfig
from llama_onnx import decoder_feeds, projection_nodes
from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static


class PromptReader(CalibrationDataReader):
    """One prefill per calibration prompt, each from an empty cache."""

    def __init__(self, config: LlamaConfig, prompts_ids: list[list[int]]):
        self._feeds = iter([decoder_feeds(config, ids) for ids in prompts_ids])

    def get_next(self):
        return next(self._feeds, None)


# The activation types --activations offers; quantize_static makes either asymmetric (a zero point).
ACTIVATION_TYPES = {"uint8": QuantType.QUInt8, "int8": QuantType.QInt8}


def quantize(
    fp32_path: str, qdq_path: str, config: LlamaConfig, prompts_ids: list[list[int]], activations: str
) -> None:
    """Writes the QDQ model with `activations` (a key of ACTIVATION_TYPES) to qdq_path, its weights
    in an external-data file beside it."""
    quantize_static(
        fp32_path,
        qdq_path,
        PromptReader(config, prompts_ids),
        quant_format=QuantFormat.QDQ,
        op_types_to_quantize=["MatMul"],
        nodes_to_quantize=projection_nodes(config),
        per_channel=True,
        activation_type=ACTIVATION_TYPES[activations],
        weight_type=QuantType.QInt8,
        calibrate_method=CalibrationMethod.MinMax,
        use_external_data_format=True,
        # Outputs stay float: a Q/DQ pair on a projection's output would only add rounding (the
        # logits would be 8-bit), and the EP's group then ends in a float output.
        extra_options={"MatMulConstBOnly": True, "OpTypesToExcludeOutputQuantization": ["MatMul"]},
    )
