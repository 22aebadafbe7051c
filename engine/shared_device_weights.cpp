// SPDX-License-Identifier: Apache-2.0
#include "engine/shared_device_weights.h"

#include <string>

namespace onebit {

PackRegistry<SharedUpload>& device_weights_registry() {
  static auto* registry = new PackRegistry<SharedUpload>;  // never destroyed: groups may outlive statics at exit
  return *registry;
}

npu::Result<std::shared_ptr<const npu::DeviceWeights>> DeviceWeightStore::weights(npu::Device& device, const int8_t* w,
                                                                                  npu::WeightLayout layout, uint32_t K,
                                                                                  uint32_t N,
                                                                                  const npu::Tiling& tiling) {
  if (&device != device_->device.get())
    return npu::make_error(npu::ErrorCode::kInternal, "weights asked for on another device than the store's");
  if (w == nullptr) return npu::make_error(npu::ErrorCode::kInvalidArgument, "no weights");
  const auto upload = [&] {
    SharedUpload uploaded{device_, npu::upload_weights(device, w, layout, K, N, tiling)};
    if (uploaded.weights) uploaded_bytes_ += uploaded.weights->bo->size();
    return uploaded;
  };
  std::shared_ptr<const SharedUpload> entry;
  if (share_) {
    const uint64_t hash = content_hash(w, size_t(K) * N);
    const std::string key = "w8 " + std::to_string(device_->id) + " " + std::to_string(K) + " " + std::to_string(N) +
                            " " + std::to_string(int(layout)) + " " + std::to_string(tiling.k_tile) + " " +
                            std::to_string(tiling.n_tile) + " " + std::to_string(hash);
    // A failed upload leaves an entry no lookup takes, freed on return.
    entry = device_weights_registry().find_or_pack(
        key,
        [&](const SharedUpload& u) {
          return u.weights && u.weights->tiling == tiling && npu::uploaded_from(*u.weights, w, layout, K, N);
        },
        upload);
  } else {
    entry = std::make_shared<const SharedUpload>(upload());
  }
  if (!entry->weights) return entry->weights.error();
  // Aliasing: the caller holds the entry, so the buffer and its device, through the weights.
  return std::shared_ptr<const npu::DeviceWeights>(entry, &entry->weights.value());
}

}  // namespace onebit
