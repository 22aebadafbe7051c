// SPDX-License-Identifier: Apache-2.0
// Helpers for the device runtime tests: seeded int8 operands, a plain reference GEMM, and
// private temporary directories (designs cache, lock files) so tests never touch the user's.
#pragma once
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "npu/design.h"
#include "npu/emu/design_builder.h"
#include "npu/emu/emu_device.h"

namespace onebit_npu_test {

inline std::vector<int8_t> random_int8(std::mt19937& rng, size_t count) {
  std::uniform_int_distribution<int> dist(-128, 127);
  std::vector<int8_t> v(count);
  for (auto& e : v) e = static_cast<int8_t>(dist(rng));
  return v;
}

// C[m][n] = sum_k A[m][k] * W[k][n], in int64 (A M×K, W K×N, both row-major).
inline std::vector<int64_t> reference_gemm(const std::vector<int8_t>& a, const std::vector<int8_t>& w, size_t M,
                                           size_t K, size_t N) {
  std::vector<int64_t> c(M * N, 0);
  for (size_t m = 0; m < M; ++m)
    for (size_t n = 0; n < N; ++n) {
      int64_t sum = 0;
      for (size_t k = 0; k < K; ++k) sum += int64_t(a[m * K + k]) * int64_t(w[k * N + n]);
      c[m * N + n] = sum;
    }
  return c;
}

inline std::vector<int8_t> transpose(const std::vector<int8_t>& w, size_t K, size_t N) {
  std::vector<int8_t> t(K * N);
  for (size_t k = 0; k < K; ++k)
    for (size_t n = 0; n < N; ++n) t[n * K + k] = w[k * N + n];
  return t;
}

// Sets (value) or unsets (nullptr) an environment variable for one scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* v = std::getenv(name)) saved_ = v, had_ = true;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_, saved_.c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string saved_;
  bool had_ = false;
};

// A fresh directory under the system temp dir, removed with its contents at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "onebit-npu-test-XXXXXX").string();
    path_ = mkdtemp(pattern.data()) != nullptr ? pattern : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline onebit::npu::Design must_build(uint32_t K, uint32_t N, uint32_t m_block) {
  onebit::npu::Result<onebit::npu::Design> d = onebit::npu::build_design({onebit::npu::Target::kEmu, K, N, m_block});
  if (!d) abort();
  return std::move(d).value();
}

// A test with its own emulated device, whose lock file lives in a private directory.
class EmuDeviceFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    onebit::npu::EmuDeviceOptions options;
    options.lock_path = tmp_.file("lock");
    auto d = onebit::npu::open_emu_device(options);
    ASSERT_TRUE(d);
    device_ = std::move(d).value();
  }
  TempDir tmp_;
  std::unique_ptr<onebit::npu::Device> device_;
};

}  // namespace onebit_npu_test
