// SPDX-License-Identifier: Apache-2.0
// One upload of a weight per opened device: every group, of every session on a device that
// shared_device.h shares, that packs the same values into the same design tiling gets the same
// weight buffer, read-only, freed with the last group holding it. A and C buffers stay per group.
//
// Found as the host's packed weights are (shared_weights.h, the same PackRegistry): a key of
// the device (its process-unique id), K, N, the source layout and the tiling, and a 64-bit hash
// of the values; a candidate is taken only if the weight reads back from the buffer's host copy
// value for value through the tiling (npu::uploaded_from). The hash only finds candidates: a
// collision costs one comparison, never a wrong hit.
#pragma once
#include <cstdint>
#include <memory>

#include "engine/shared_device.h"
#include "engine/shared_weights.h"
#include "npu/device_weights.h"

namespace onebit {

// A registry entry: the uploaded weights and the device they live on, kept open while they are held.
struct SharedUpload {
  std::shared_ptr<const OpenedDevice> device;  // destroyed after the weights (declared first)
  npu::Result<npu::DeviceWeights> weights;
};

// The WeightStore the groups of a session on `device` create their DeviceGemm with.
class DeviceWeightStore final : public npu::WeightStore {
 public:
  // With `share` false every group uploads its own copy.
  DeviceWeightStore(std::shared_ptr<const OpenedDevice> device, bool share)
      : device_(std::move(device)), share_(share) {}

  npu::Result<std::shared_ptr<const npu::DeviceWeights>> weights(npu::Device& device, const int8_t* w,
                                                                 npu::WeightLayout layout, uint32_t K, uint32_t N,
                                                                 const npu::Tiling& tiling) override;

  // Bytes this store packed and uploaded so far (a weight found on the device adds none).
  uint64_t uploaded_bytes() const { return uploaded_bytes_; }

 private:
  std::shared_ptr<const OpenedDevice> device_;
  bool share_;
  uint64_t uploaded_bytes_ = 0;
};

// The process's uploaded weights (tests count the live ones).
PackRegistry<SharedUpload>& device_weights_registry();

}  // namespace onebit
