// SPDX-License-Identifier: Apache-2.0
#include "engine/batch_broadcast.h"

#include <algorithm>

namespace onebit {

namespace {

// dims right-aligned to `rank` leading ones.
std::vector<int64_t> aligned(const std::vector<int64_t>& dims, size_t rank) {
  std::vector<int64_t> out(rank - dims.size(), 1);
  out.insert(out.end(), dims.begin(), dims.end());
  return out;
}

// Row-major strides of dims, 0 where a dim of 1 is stretched to the output's.
std::vector<size_t> strides(const std::vector<int64_t>& dims) {
  std::vector<size_t> s(dims.size(), 0);
  size_t step = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    s[i] = dims[i] == 1 ? 0 : step;
    step *= static_cast<size_t>(dims[i]);
  }
  return s;
}

}  // namespace

std::optional<BatchBroadcast> broadcast_batches(const std::vector<int64_t>& x_batch,
                                                const std::vector<int64_t>& b_batch) {
  const size_t rank = std::max(x_batch.size(), b_batch.size());
  const std::vector<int64_t> x = aligned(x_batch, rank), w = aligned(b_batch, rank);
  BatchBroadcast b;
  size_t entries = 1;
  for (size_t i = 0; i < rank; ++i) {
    if (x[i] != w[i] && x[i] != 1 && w[i] != 1) return std::nullopt;
    b.dims.push_back(x[i] == 1 ? w[i] : x[i]);
    entries *= static_cast<size_t>(b.dims.back());
  }
  const std::vector<size_t> x_stride = strides(x), b_stride = strides(w);
  for (size_t o = 0; o < entries; ++o) {
    size_t rest = o, xi = 0, wi = 0;
    for (size_t i = rank; i-- > 0;) {
      const size_t index = rest % static_cast<size_t>(b.dims[i]);
      rest /= static_cast<size_t>(b.dims[i]);
      xi += index * x_stride[i];
      wi += index * b_stride[i];
    }
    b.x_entry.push_back(xi);
    b.b_entry.push_back(wi);
  }
  return b;
}

bool batches_may_broadcast(const std::vector<int64_t>& x_batch, const std::vector<int64_t>& b_batch) {
  const size_t rank = std::max(x_batch.size(), b_batch.size());
  const std::vector<int64_t> x = aligned(x_batch, rank), w = aligned(b_batch, rank);
  for (size_t i = 0; i < rank; ++i)
    if (x[i] >= 0 && w[i] >= 0 && x[i] != 1 && w[i] != 1 && x[i] != w[i]) return false;
  return true;
}

}  // namespace onebit
