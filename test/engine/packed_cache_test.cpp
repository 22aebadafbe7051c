// SPDX-License-Identifier: Apache-2.0
// The packed-weights cache folder: a weight packed once is served from its mapped entry after
// that, and whatever is wrong with an entry (truncated, a flipped byte in the payload or the
// header, another layout version, another weight's file, empty, a directory or a FIFO in its
// place) is reported naming the file, and the weights served are still exactly the fresh packing.
// Racing writers (threads, processes) leave one whole entry; growth stays under the size limit.
#include "engine/packed_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "engine/shared_weights.h"
#include "npu_test_util.h"

namespace onebit {
namespace {

using onebit_npu_test::TempDir;

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

constexpr int64_t K = 300, N = 70;  // padding in k and n

// One int8 weight with per-column zero points, served through a cache folder.
struct Weight {
  std::vector<uint8_t> values;
  std::vector<int32_t> zero_points;
  explicit Weight(uint32_t seed) : values(random_bytes(K * N, seed)) {
    for (uint8_t b : random_bytes(N, seed + 1)) zero_points.push_back(int8_t(b));
  }

  std::shared_ptr<const PackedWeights> served(const PackedCache& cache, PackOutcome& outcome) const {
    return shared_pack_weights(values.data(), QType::Int8, K, N, false, zero_points.data(), N, {true, &cache},
                               selected_k_group(), &outcome);
  }
  PackedWeights fresh() const { return pack_weights(values.data(), QType::Int8, K, N, false, zero_points.data(), N); }
  // The registry key's file in `cache` (found as the one entry a first packing writes).
  std::string entry(const PackedCache& cache, const std::string& dir) const {
    PackOutcome outcome;
    served(cache, outcome);
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().string().ends_with(kPackedCacheSuffix)) return e.path().string();
    return "";
  }
};

void expect_exact(const PackedWeights& got, const PackedWeights& want) {
  EXPECT_EQ(got.K, want.K);
  EXPECT_EQ(got.N, want.N);
  EXPECT_EQ(got.group, want.group);
  EXPECT_TRUE(got.blocks == want.blocks);
  EXPECT_EQ(got.zero_point, want.zero_point);
  EXPECT_EQ(got.col_sum, want.col_sum);
}

constexpr uint64_t kMaxBytes = uint64_t{64} << 20;

TEST(PackedCache, PacksOnceThenServesTheMappedEntry) {
  TempDir dir;
  const PackedCache cache(dir.path(), kMaxBytes);
  const Weight w(1);
  PackOutcome first;
  auto a = w.served(cache, first);
  EXPECT_EQ(first.origin, PackOutcome::Origin::Packed);
  EXPECT_TRUE(first.cache_written);
  EXPECT_EQ(first.cache_problem, "");
  EXPECT_TRUE(a->blocks.is_view());  // served from the file it wrote, as every later process is
  expect_exact(*a, w.fresh());

  PackOutcome in_process;
  EXPECT_EQ(w.served(cache, in_process), a);  // the registry comes first
  EXPECT_EQ(in_process.origin, PackOutcome::Origin::Registry);
  a.reset();  // as in a process that has not packed it

  PackOutcome second;
  auto b = w.served(cache, second);
  EXPECT_EQ(second.origin, PackOutcome::Origin::CacheFile);
  EXPECT_FALSE(second.cache_written);
  EXPECT_EQ(second.cache_problem, "");
  EXPECT_TRUE(b->blocks.is_view());
  expect_exact(*b, w.fresh());
}

TEST(PackedCache, NbitsWeightsToo) {
  TempDir dir;
  const PackedCache cache(dir.path(), kMaxBytes);
  const int64_t nK = 40, nN = 11, bits = 4, block = 32, k_blocks = 2;
  const std::vector<uint8_t> b = random_bytes(size_t(nN * k_blocks * block * bits / 8), 3);
  const std::vector<float> scales(size_t(nN * k_blocks), 0.5f);
  const NBitsWeights w{nK, nN, bits, block, b.data(), int64_t(b.size()), scales.data(), int64_t(scales.size())};
  PackedNBits fresh;
  ASSERT_EQ(pack_nbits_weights(w, fresh), "");
  std::string error;
  PackOutcome first, second;
  auto packed = shared_pack_nbits(w, {true, &cache}, error, &first);
  ASSERT_NE(packed, nullptr);
  EXPECT_TRUE(first.cache_written);
  EXPECT_TRUE(packed->data == fresh.data);
  packed.reset();
  packed = shared_pack_nbits(w, {true, &cache}, error, &second);
  ASSERT_NE(packed, nullptr);
  EXPECT_EQ(second.origin, PackOutcome::Origin::CacheFile);
  EXPECT_TRUE(packed->data.is_view());
  EXPECT_TRUE(packed->data == fresh.data);
}

// What is done to the entry, and a word the warning must hold (the check that failed).
struct Damage {
  const char* name;
  std::function<void(const std::string& path)> apply;
  const char* reported;
};

void flip_byte(const std::string& path, size_t at) {
  std::vector<uint8_t> bytes = file_bytes(path);
  bytes.at(at) ^= 0x01;
  write_bytes(path, bytes);
}

// The header's fields this test rewrites (engine/packed_cache.cpp): the layout version at byte
// 12, the header checksum at 80 over the 80 bytes before it.
void set_layout_version(const std::string& path, uint32_t version) {
  std::vector<uint8_t> bytes = file_bytes(path);
  std::memcpy(bytes.data() + 12, &version, sizeof version);
  const uint64_t hash = content_hash(bytes.data(), 80);
  std::memcpy(bytes.data() + 80, &hash, sizeof hash);
  write_bytes(path, bytes);
}

TEST(PackedCache, EveryDamagedEntryIsReportedAndRepacked) {
  const Weight w(5), other(6);  // same sizes, other values
  const std::vector<Damage> damages = {
      {"truncated", [](const std::string& p) { std::filesystem::resize_file(p, file_bytes(p).size() - 100); },
       "truncated"},
      {"payload byte", [](const std::string& p) { flip_byte(p, file_bytes(p).size() / 2); }, "payload checksum"},
      {"header byte", [](const std::string& p) { flip_byte(p, 20); }, "header checksum"},
      {"magic", [](const std::string& p) { flip_byte(p, 0); }, "magic"},
      {"layout version", [](const std::string& p) { set_layout_version(p, kPackedLayoutVersion + 1); }, "layout"},
      {"empty", [](const std::string& p) { std::filesystem::resize_file(p, 0); }, "bytes where"},
      {"another weight's entry",
       [&](const std::string& p) {
         TempDir elsewhere;
         const PackedCache cache(elsewhere.path(), kMaxBytes);
         std::filesystem::copy_file(other.entry(cache, elsewhere.path()), p,
                                    std::filesystem::copy_options::overwrite_existing);
       },
       "another"},  // another key, or (keys of other lengths) another weight's size
  };
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.name);
    TempDir dir;
    const PackedCache cache(dir.path(), kMaxBytes);
    const std::string path = w.entry(cache, dir.path());
    ASSERT_NE(path, "");
    damage.apply(path);
    PackOutcome outcome;
    auto served = w.served(cache, outcome);
    EXPECT_EQ(outcome.origin, PackOutcome::Origin::Packed);
    EXPECT_NE(outcome.cache_problem.find(path), std::string::npos) << outcome.cache_problem;
    EXPECT_NE(outcome.cache_problem.find(damage.reported), std::string::npos) << outcome.cache_problem;
    expect_exact(*served, w.fresh());
    EXPECT_TRUE(outcome.cache_written);  // rewritten whole: the next process maps it
    served.reset();
    PackOutcome next;
    expect_exact(*w.served(cache, next), w.fresh());
    EXPECT_EQ(next.origin, PackOutcome::Origin::CacheFile);
  }
}

// Only an entry that is served counts as used: a corrupt one that cannot be rewritten (a smaller
// limit) keeps its old time, so it goes first when the folder needs room.
TEST(PackedCache, OnlyAServedEntryCountsAsUsed) {
  const Weight w(10);
  TempDir dir;
  const PackedCache cache(dir.path(), kMaxBytes);
  const std::string path = w.entry(cache, dir.path());
  const timespec long_ago[2] = {{1000, 0}, {1000, 0}};
  const auto time_of = [&] { return std::filesystem::last_write_time(path); };
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), long_ago, 0), 0);
  const auto old_time = time_of();
  flip_byte(path, file_bytes(path).size() / 2);
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), long_ago, 0), 0);
  const PackedCache small(dir.path(), 1024);  // too small to rewrite it
  PackOutcome outcome;
  expect_exact(*w.served(small, outcome), w.fresh());
  EXPECT_NE(outcome.cache_problem.find("payload checksum"), std::string::npos) << outcome.cache_problem;
  EXPECT_NE(outcome.cache_problem.find("1 MiB does not fit"), std::string::npos) << outcome.cache_problem;
  EXPECT_FALSE(outcome.cache_written);
  EXPECT_EQ(time_of(), old_time);
}

// A file whose header and checksums hold but whose payload is another weight's packing (a foreign
// writer): only reading it back against the model's weight tells, and it does.
TEST(PackedCache, AValidEntryOfOtherValuesIsNeverServed) {
  TempDir dir;
  const PackedCache cache(dir.path(), kMaxBytes);
  const Weight w(7), other(8);
  const std::string path = w.entry(cache, dir.path());
  const PackedWeights wrong = other.fresh();
  std::string key;  // the entry's key, as stored after the 128-byte header
  {
    const std::vector<uint8_t> bytes = file_bytes(path);
    uint64_t key_bytes = 0;
    std::memcpy(&key_bytes, bytes.data() + 16, sizeof key_bytes);
    key.assign(reinterpret_cast<const char*>(bytes.data() + 128), key_bytes);
  }
  ASSERT_EQ(cache.path_of(key), path);
  ASSERT_EQ(cache.store(key, {{wrong.blocks.data(), wrong.blocks.size()},
                              {wrong.zero_point.data(), wrong.zero_point.size() * 4},
                              {wrong.col_sum.data(), wrong.col_sum.size() * 4}}),
            "");
  std::string problem;
  ASSERT_TRUE(cache.load(key, {wrong.blocks.size(), size_t(N) * 4, size_t(N) * 4}, problem).has_value()) << problem;
  PackOutcome outcome;
  auto served = w.served(cache, outcome);
  EXPECT_NE(outcome.cache_problem.find("does not read back"), std::string::npos) << outcome.cache_problem;
  expect_exact(*served, w.fresh());
}

TEST(PackedCache, ADirectoryOrAFifoInTheEntrysPlaceIsAnErrorNotAHang) {
  const Weight w(9);
  for (const bool fifo : {false, true}) {
    SCOPED_TRACE(fifo ? "fifo" : "directory");
    TempDir dir;
    const PackedCache cache(dir.path(), kMaxBytes);
    const std::string path = w.entry(cache, dir.path());
    std::filesystem::remove(path);
    if (fifo)
      ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
    else
      std::filesystem::create_directory(path);
    PackOutcome outcome;
    auto served = w.served(cache, outcome);
    EXPECT_NE(outcome.cache_problem.find(fifo ? "a FIFO" : "a directory"), std::string::npos) << outcome.cache_problem;
    expect_exact(*served, w.fresh());
    // A FIFO is replaced by the rename; a directory cannot be, so the weight stays packed in the process.
    EXPECT_EQ(outcome.cache_written, fifo);
  }
}

// Entries 1-3 written in turn with a limit that holds two: writing the third removes the least
// recently used, which is entry 2 once entry 1 has been loaded again. No writer's temporary file remains.
TEST(PackedCache, GrowthStaysUnderTheLimitLeastRecentlyUsedFirst) {
  TempDir dir;
  const std::vector<uint8_t> payload(100000, 7);
  const std::vector<CacheSection> sections = {{payload.data(), payload.size()}};
  const uint64_t entry_bytes = 100224;  // header (128), key (7, to 192) and payload, 64-byte aligned
  const PackedCache cache(dir.path(), entry_bytes * 2 + entry_bytes / 2);
  std::string problem;
  const timespec long_ago[2] = {{1000, 0}, {1000, 0}}, later[2] = {{2000, 0}, {2000, 0}};
  ASSERT_EQ(cache.store("entry 1", sections), "");
  ASSERT_EQ(cache.store("entry 2", sections), "");
  ASSERT_EQ(std::filesystem::file_size(cache.path_of("entry 1")), entry_bytes);
  ASSERT_EQ(::utimensat(AT_FDCWD, cache.path_of("entry 1").c_str(), long_ago, 0), 0);
  ASSERT_EQ(::utimensat(AT_FDCWD, cache.path_of("entry 2").c_str(), later, 0), 0);
  cache.mark_used("entry 1");
  ASSERT_EQ(cache.store("entry 3", sections), "");
  EXPECT_TRUE(std::filesystem::exists(cache.path_of("entry 1")));
  EXPECT_FALSE(std::filesystem::exists(cache.path_of("entry 2")));
  EXPECT_TRUE(std::filesystem::exists(cache.path_of("entry 3")));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 2);
  const std::string too_large = cache.store("entry 4", {{payload.data(), payload.size()}, {payload.data(), 200000}});
  EXPECT_NE(too_large.find("packed_cache_max_mb"), std::string::npos) << too_large;
}

TEST(PackedCache, RacingWritersLeaveOneWholeEntry) {
  TempDir dir;
  const PackedCache cache(dir.path(), kMaxBytes);
  const std::vector<uint8_t> payload = random_bytes(1 << 20, 11);
  const std::vector<CacheSection> sections = {{payload.data(), payload.size()}};
  std::vector<std::thread> threads;
  std::vector<std::string> results(4);
  for (size_t t = 0; t < results.size(); ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) results[t] += cache.store("raced", sections);
    });
  for (auto& thread : threads) thread.join();
  for (const std::string& r : results) EXPECT_EQ(r, "");
  std::string problem;
  const std::optional<CacheEntry> entry = cache.load("raced", {payload.size()}, problem);
  ASSERT_TRUE(entry.has_value()) << problem;
  EXPECT_EQ(std::memcmp(entry->sections[0].data, payload.data(), payload.size()), 0);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);  // no temporary file left
}

// Processes that pack the same weight at once through one folder: each is served exactly the
// fresh packing, and the entry they leave serves the next one.
TEST(PackedCache, RacingProcessesEachGetTheExactPacking) {
  TempDir dir;
  const PackedCache cache(dir.path(), kMaxBytes);
  const Weight w(12);
  std::vector<pid_t> children;
  for (int i = 0; i < 4; ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      PackOutcome outcome;
      auto served = w.served(cache, outcome);
      const PackedWeights fresh = w.fresh();
      const bool exact = served->blocks == fresh.blocks && served->col_sum == fresh.col_sum &&
                         served->zero_point == fresh.zero_point && outcome.cache_problem.empty();
      ::_exit(exact ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << pid;
  }
  PackOutcome outcome;
  expect_exact(*w.served(cache, outcome), w.fresh());
  EXPECT_EQ(outcome.origin, PackOutcome::Origin::CacheFile);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

}  // namespace
}  // namespace onebit
