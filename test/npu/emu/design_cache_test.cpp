// SPDX-License-Identifier: Apache-2.0
// The on-disk design cache: build on a miss (atomically), reuse on a hit, reject a bad file
// without replacing it, and the default directory.
#include "npu/emu/design_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "npu/device_gemm.h"
#include "npu/emu/design_elf.h"
#include "npu/emu/emu_device.h"
#include "npu_test_util.h"

namespace onebit::npu {
namespace {

namespace fs = std::filesystem;
using onebit_npu_test::ScopedEnv;
using onebit_npu_test::TempDir;

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

size_t files_in(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

TEST(DesignCache, BuildsOnMissAndReusesOnHit) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/nested/designs";  // created on demand
  DesignCache cache(dir);
  const DesignKey key{Target::kEmu, 1024, 2048, 32};

  Result<CachedDesign> first = cache.get(key);
  ASSERT_TRUE(first) << first.error().reason;
  EXPECT_TRUE(first->built);
  // In the folder of this generator version: designs another version built are never read.
  EXPECT_EQ(cache.version_dir(), dir + "/builder-" + std::to_string(kDesignBuilderVersion));
  EXPECT_EQ(first->path, cache.version_dir() + "/emu_1024x2048_m32.elf");
  EXPECT_EQ(files_in(cache.version_dir()), 1u);  // no temp file left behind
  EXPECT_EQ(read_file(first->path), write_design_elf(first->design));

  struct stat before{};
  ASSERT_EQ(::stat(first->path.c_str(), &before), 0);
  Result<CachedDesign> second = cache.get(key);
  ASSERT_TRUE(second) << second.error().reason;
  EXPECT_FALSE(second->built);
  EXPECT_EQ(second->design.program, first->design.program);
  struct stat after{};
  ASSERT_EQ(::stat(first->path.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);  // not rewritten
  EXPECT_EQ(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);
  EXPECT_EQ(before.st_mtim.tv_sec, after.st_mtim.tv_sec);

  // Another block size is another file.
  Result<CachedDesign> m4 = cache.get({Target::kEmu, 1024, 2048, 4});
  ASSERT_TRUE(m4);
  EXPECT_TRUE(m4->built);
  EXPECT_EQ(files_in(cache.version_dir()), 2u);
}

TEST(DesignCache, DeviceGemmCountsBuiltAndLoadedDesigns) {
  TempDir tmp;
  DesignCache cache(tmp.file("designs"));
  EmuDeviceOptions options;
  options.lock_path = tmp.file("lock");
  auto device = open_emu_device(options);
  ASSERT_TRUE(device);
  std::mt19937 rng(3);
  const std::vector<int8_t> w = onebit_npu_test::random_int8(rng, 64 * 40);

  auto first = DeviceGemm::create(**device, cache, 64, 40, w.data(), WeightLayout::kKN);
  ASSERT_TRUE(first) << first.error().reason;
  EXPECT_EQ((*first)->setup_stats().designs_built, 2u);
  EXPECT_EQ((*first)->setup_stats().designs_loaded, 2u);

  auto again = DeviceGemm::create(**device, cache, 64, 40, w.data(), WeightLayout::kKN);
  ASSERT_TRUE(again) << again.error().reason;
  EXPECT_EQ((*again)->setup_stats().designs_built, 0u);
  EXPECT_EQ((*again)->setup_stats().designs_loaded, 2u);
}

TEST(DesignCache, ACorruptFileIsRejectedAndLeftAlone) {
  TempDir tmp;
  DesignCache cache(tmp.path());
  const DesignKey key{Target::kEmu, 128, 64, 4};
  ASSERT_TRUE(cache.get(key));
  const std::string path = cache.path_of(key);
  std::vector<uint8_t> bytes = read_file(path);
  bytes.resize(bytes.size() / 2);  // truncated, e.g. by a full disk
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  Result<CachedDesign> r = cache.get(key);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kDesign);
  EXPECT_NE(r.error().reason.find(path), std::string::npos) << r.error().reason;
  EXPECT_EQ(read_file(path), bytes);  // not silently rebuilt

  // A device GEMM over that shape fails to set up, with the reason.
  EmuDeviceOptions options;
  options.lock_path = tmp.file("lock");
  auto device = open_emu_device(options);
  std::vector<int8_t> w(128 * 64, 1);
  auto gemm = DeviceGemm::create(**device, cache, 128, 64, w.data(), WeightLayout::kKN);
  ASSERT_FALSE(gemm);
  EXPECT_EQ(gemm.error().code, ErrorCode::kDesign);

  fs::remove(path);  // deleting the file is how it gets rebuilt
  Result<CachedDesign> rebuilt = cache.get(key);
  ASSERT_TRUE(rebuilt);
  EXPECT_TRUE(rebuilt->built);
}

TEST(DesignCache, ReportsUnusableDirectoriesAndShapes) {
  TempDir tmp;
  std::ofstream(tmp.file("plain-file")) << "x";
  DesignCache under_a_file(tmp.file("plain-file") + "/designs");
  Result<CachedDesign> r = under_a_file.get({Target::kEmu, 8, 8, 4});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kDesign);
  EXPECT_NE(r.error().reason.find("designs dir"), std::string::npos) << r.error().reason;

  DesignCache cache(tmp.path());
  r = cache.get({Target::kEmu, 0, 8, 4});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().reason.find("cannot build emu 0x8 m4"), std::string::npos) << r.error().reason;
  r = cache.get({Target::kEmu, kMaxK + 1, 8, 4});
  EXPECT_FALSE(r);
}

TEST(DesignCache, DefaultDirectoryFollowsXdgThenHome) {
  ScopedEnv xdg("XDG_CACHE_HOME", std::getenv("XDG_CACHE_HOME")), home("HOME", std::getenv("HOME"));
  setenv("XDG_CACHE_HOME", "/some/cache", 1);
  EXPECT_EQ(default_designs_dir(), "/some/cache/onebit-ep/designs");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(default_designs_dir(), "/home/someone/.cache/onebit-ep/designs");
  setenv("XDG_CACHE_HOME", "relative", 1);  // not absolute: ignored, as the XDG spec says
  EXPECT_EQ(default_designs_dir(), "/home/someone/.cache/onebit-ep/designs");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  EXPECT_EQ(default_designs_dir(), "/tmp/onebit-ep-designs");
}

}  // namespace
}  // namespace onebit::npu
