// SPDX-License-Identifier: Apache-2.0
// Kernel selection by CPU feature (ONEBIT_KERNEL forces one), and the whole-matrix entry point.
#include <cstdlib>

#include "kernels/cpu_features.h"
#include "kernels/gemm_q8_kernels.h"

namespace onebit {

const std::vector<HostKernel>& host_kernels() {
  static const std::vector<HostKernel> kernels{
      {"amx", KGroup::Quads, gemm_q8_blocks_amx, true, [] { return cpu_features().amx_int8; }},
      {"avx512vnni", KGroup::Quads, gemm_q8_blocks_avx512vnni, true, [] { return cpu_features().avx512_vnni; }},
      {"avxvnni", KGroup::Quads, gemm_q8_blocks_avxvnni, true, [] { return cpu_features().avx_vnni; }},
      {"avx2", KGroup::Pairs, gemm_q8_blocks_avx2, false, [] { return cpu_features().avx2; }},
      {"portable", KGroup::Pairs, gemm_q8_blocks_portable, false, [] { return true; }},
  };
  return kernels;
}

namespace {

const HostKernel* kernel_named(const std::string& name) {
  for (const HostKernel& k : host_kernels())
    if (name == k.name) return &k;
  return nullptr;
}

const char* forced_kernel() { return std::getenv("ONEBIT_KERNEL"); }

const HostKernel& choose_kernel() {
  const char* forced = forced_kernel();
  if (forced != nullptr && kernel_choice_error().empty()) return *kernel_named(forced);
  for (const HostKernel& k : host_kernels())
    if (k.available()) return k;
  return host_kernels().back();
}

}  // namespace

std::string kernel_choice_error() {
  const char* forced = forced_kernel();
  if (forced == nullptr) return {};
  const HostKernel* kernel = kernel_named(forced);
  if (kernel == nullptr) {
    std::string names;
    for (const HostKernel& k : host_kernels()) names += std::string(names.empty() ? "" : "|") + k.name;
    return "ONEBIT_KERNEL='" + std::string(forced) + "' is not a kernel (" + names + ")";
  }
  if (!kernel->available())
    return "ONEBIT_KERNEL=" + std::string(forced) + ": this CPU (or its OS) cannot run that kernel";
  return {};
}

const HostKernel& selected_host_kernel() {
  static const HostKernel& kernel = choose_kernel();
  return kernel;
}

GemmBlocksKernel selected_kernel() { return selected_host_kernel().run; }
const char* selected_kernel_name() { return selected_host_kernel().name; }
KGroup selected_k_group() { return selected_host_kernel().group; }

namespace {

bool prepared_for(const HostKernel& kernel, const PreparedActivation& x, const PackedWeights& w) {
  return x.group == kernel.group && w.group == kernel.group;
}

}  // namespace

void gemm_q8_blocks(const PreparedActivation& x, const PackedWeights& w, int64_t block_begin, int64_t block_end,
                    int32_t* acc, int64_t acc_stride, const FusedFloatOutput* fused) {
  const HostKernel& kernel = selected_host_kernel();
  (prepared_for(kernel, x, w) ? kernel.run : gemm_q8_blocks_portable)(x, w, block_begin, block_end, acc, acc_stride,
                                                                      fused);
}

bool gemm_q8_fuses_float_output(const PreparedActivation& x, const PackedWeights& w) {
  const HostKernel& kernel = selected_host_kernel();
  return kernel.fuses_float_output && prepared_for(kernel, x, w);
}

void gemm_q8_host(const Activation& x, const PackedWeights& w, int32_t* acc) {
  const PreparedActivation prepared = prepare_activation(x, w.K, w.group);
  gemm_q8_blocks(prepared, w, 0, w.n_blocks(), acc, w.N);
}

}  // namespace onebit
