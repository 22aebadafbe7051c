// SPDX-License-Identifier: Apache-2.0
// A weight packed into a design's tiling and uploaded to a device: the W buffer every launch of a
// DeviceGemm reads. Nothing writes it after the upload, so DeviceGemms of one device may share
// it; where a DeviceGemm gets it from is a WeightStore (its own upload by default, or a shared
// one: engine/shared_device_weights.h).
#pragma once
#include <cstdint>
#include <memory>

#include "base/error.h"
#include "npu/design.h"
#include "npu/device.h"
#include "npu/weight_layout.h"

namespace onebit::npu {

struct DeviceWeights {
  std::unique_ptr<BufferObject> bo;  // packed_weight_bytes(K, N, tiling), synced to the device
  uint32_t K = 0, N = 0;
  Tiling tiling;
};

// Packs `w` (K×N or N×K int8, per `layout`) into `tiling` and uploads it to `device` (one sync).
Result<DeviceWeights> upload_weights(Device& device, const int8_t* w, WeightLayout layout, uint32_t K, uint32_t N,
                                     const Tiling& tiling);

// True when `weights` are what upload_weights makes of `w` for its K, N and tiling: the BO's
// host copy (what was synced) read back value by value through the tiling.
bool uploaded_from(const DeviceWeights& weights, const int8_t* w, WeightLayout layout, uint32_t K, uint32_t N);

// Where DeviceGemm::create gets the weights for the tiling its designs use.
class WeightStore {
 public:
  virtual ~WeightStore() = default;
  virtual Result<std::shared_ptr<const DeviceWeights>> weights(Device& device, const int8_t* w, WeightLayout layout,
                                                               uint32_t K, uint32_t N, const Tiling& tiling) = 0;
};

// The default store: every DeviceGemm uploads its own copy.
WeightStore& own_weights();

}  // namespace onebit::npu
