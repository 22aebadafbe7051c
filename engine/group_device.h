// SPDX-License-Identifier: Apache-2.0
// One group's device leg: its designs loaded (or built) and its weights packed into the designs'
// layout and uploaded, straight from the model's weights: once per process and device when the
// session shares them (shared_device_weights.h), else once per session.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "engine/counters.h"
#include "kernels/quant_types.h"
#include "npu/device_gemm.h"

namespace onebit {

class SessionDevice;

// A constant weight as the model holds it: K×N (or N×K when is_nk) values of `type`.
struct WeightSource {
  const void* data = nullptr;
  QType type = QType::Int8;
  int64_t K = 0;
  int64_t N = 0;
  bool is_nk = false;
};

struct GroupDevice {
  std::unique_ptr<npu::DeviceGemm> gemm;  // null: no designs for this shape (see failure)
  std::string failure;
};

// Builds or loads the group's designs and uploads its weights (shifted to int8 as the host
// kernels store them), or finds them uploaded by another group on the device; counts designs
// built / loaded / failed and the weight bytes it uploaded.
GroupDevice prepare_group_device(SessionDevice& device, const WeightSource& weight, Counters& counters);

}  // namespace onebit
