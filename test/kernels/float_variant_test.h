// SPDX-License-Identifier: Apache-2.0
// One test per variant of a float kernel (kernels/float_vectors.h), by name: a variant this CPU
// cannot run is skipped, and says so. `variants` is the kernel's table (attention_variants, ...).
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace onebit {

template <class Variant, const std::vector<Variant>& (*variants)()>
class FloatVariantTest : public ::testing::TestWithParam<size_t> {
 public:
  // The test name's suffix: the variant's name (avx512, avx2, portable).
  static std::string name(const ::testing::TestParamInfo<size_t>& info) { return variants().at(info.param).name; }
  static size_t count() { return variants().size(); }

 protected:
  void SetUp() override {
    if (!variant.available()) GTEST_SKIP() << "variant " << variant.name << ": this CPU cannot run it, not tested";
  }
  const Variant& variant = variants().at(GetParam());
};

}  // namespace onebit
