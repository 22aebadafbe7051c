# SPDX-License-Identifier: Apache-2.0
"""The fp32 decoder to int4 MatMulNBits, the way onnxruntime-genai's model builder makes a CPU int4
model: ORT's MatMulNBitsQuantizer, round to nearest (its default algorithm), symmetric 4-bit weights
in blocks of 32 along K with one float scale per block and column, accuracy_level 4 (ORT may quantize
the activations to int8 per block and compute in integers: W4A8).

The same MatMuls are quantized as in the A8W8 model (`llama_onnx.projection_nodes`): the 7
projections of every layer and the output projection (the builder quantizes its lm_head too unless
told to exclude it). Attention, norms and the embedding Gather stay float.
"""

from __future__ import annotations

import onnx
from gguf_llama import LlamaConfig
from llama_onnx import projection_nodes
from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer

BLOCK_SIZE = 32
ACCURACY_LEVEL = 4


def quantize(fp32_path: str, int4_path: str, config: LlamaConfig) -> None:
    """Writes the int4 model to int4_path, its weights in an external-data file beside it."""
    settings = DefaultWeightOnlyQuantConfig(block_size=BLOCK_SIZE, is_symmetric=True, accuracy_level=ACCURACY_LEVEL)
    quantizer = MatMulNBitsQuantizer(
        onnx.load(fp32_path), nodes_to_include=projection_nodes(config), algo_config=settings
    )
    quantizer.process()
    quantized = quantizer.model.model
    nodes = [n for n in quantized.graph.node if n.op_type == "MatMulNBits"]
    if len(nodes) != len(projection_nodes(config)):
        raise RuntimeError(f"quantize_int4: {len(nodes)} MatMulNBits nodes, expected {len(projection_nodes(config))}")
    name = int4_path.rsplit("/", 1)[-1]
    onnx.save(quantized, int4_path, save_as_external_data=True, location=f"{name}.data", size_threshold=1024)
