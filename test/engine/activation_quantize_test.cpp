// SPDX-License-Identifier: Apache-2.0
// quantize_activation: a float activation quantized straight into the prepared layout, its passes
// split over tasks that run on threads of their own, equals the two-pass path (dynamic_quantize or
// quantize_linear, then prepare_activation; both checked against plain references in the kernel
// tests) byte for byte, in either grouping, whatever the split.
#include "engine/activation_quantize.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <random>
#include <thread>
#include <vector>

namespace {

using onebit::KGroup;

// Each task on a thread of its own, so that tasks sharing state would race (and TSan/ASan runs see it).
struct ThreadedTasks {
  std::atomic<int> runs{0};
  std::atomic<size_t> tasks{0};
  onebit::TaskRunner runner() {
    return [this](void (*task)(void*, size_t), size_t count, void* job) {
      ++runs;
      tasks += count;
      std::vector<std::thread> threads;
      for (size_t i = 0; i < count; ++i) threads.emplace_back(task, job, i);
      for (auto& t : threads) t.join();
    };
  }
};

std::vector<float> activation(int64_t M, int64_t K, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.1f, 1.7f);
  std::vector<float> x(static_cast<size_t>(M * K));
  for (float& v : x) v = normal(rng);
  return x;
}

void expect_same(const onebit::PreparedActivation& got, const onebit::PreparedActivation& want) {
  EXPECT_EQ(got.group, want.group);
  EXPECT_EQ(got.M, want.M);
  EXPECT_EQ(got.row_stride, want.row_stride);
  EXPECT_EQ(got.zero_point, want.zero_point);
  EXPECT_EQ(got.quads, want.quads);
  EXPECT_EQ(got.pairs, want.pairs);
  EXPECT_EQ(got.row_sum, want.row_sum);
}

// Dynamic quantization of x against dynamic_quantize + prepare_activation; returns the tasks run.
size_t expect_dynamic_matches(const std::vector<float>& x, int64_t M, int64_t K, KGroup group) {
  std::vector<uint8_t> want_q(x.size());
  const auto want = onebit::dynamic_quantize(x.data(), x.size(), want_q.data());
  const auto want_a = onebit::prepare_activation({want_q.data(), onebit::QType::Uint8, want.zero_point, M}, K, group);
  ThreadedTasks tasks;
  onebit::PreparedActivation a;
  std::vector<uint8_t> x_q(x.size(), 0xA5);
  const auto q = onebit::quantize_activation(x.data(), M, K, nullptr, group, a, x_q.data(), tasks.runner());
  if (std::isnan(want.scale))
    EXPECT_TRUE(std::isnan(q.scale));
  else
    EXPECT_EQ(q.scale, want.scale);
  EXPECT_EQ(q.zero_point, want.zero_point);
  EXPECT_EQ(x_q, want_q);
  expect_same(a, want_a);
  return tasks.tasks;
}

TEST(ActivationQuantize, DynamicSplitOverTasksEqualsTwoPasses) {
  for (const KGroup group : {KGroup::Pairs, KGroup::Quads}) {
    // 1536x128 (196608 values): range and rows both in several tasks; K not a multiple of 16.
    EXPECT_GT(expect_dynamic_matches(activation(128, 1536, 1), 128, 1536, group), 2u);
    EXPECT_GT(expect_dynamic_matches(activation(97, 1003, 2), 97, 1003, group), 2u);
    // Few rows of many values: no more row tasks than rows.
    expect_dynamic_matches(activation(3, 40001, 3), 3, 40001, group);
    // Small calls stay on the calling thread.
    EXPECT_EQ(expect_dynamic_matches(activation(4, 384, 4), 4, 384, group), 0u);
  }
}

TEST(ActivationQuantize, NanOrInfInAnyTaskAsDynamicQuantize) {
  const int64_t M = 64, K = 4099;
  for (float special : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::infinity()}) {
    for (size_t at : {size_t{0}, size_t(M * K / 2 + 5), size_t(M * K - 1)}) {
      std::vector<float> x = activation(M, K, 5);
      x[at] = special;
      expect_dynamic_matches(x, M, K, onebit::selected_k_group());
    }
  }
}

TEST(ActivationQuantize, ConstantScaleReadWithTheDequantizeZeroPoint) {
  const int64_t M = 200, K = 700;
  const std::vector<float> x = activation(M, K, 6);
  for (const KGroup group : {KGroup::Pairs, KGroup::Quads}) {
    const onebit::ConstantQuantization constant{{0.02f, 131}, 120};
    std::vector<uint8_t> want_q(x.size());
    onebit::quantize_linear(x.data(), x.size(), 0.02f, 131, want_q.data());
    const auto want_a = onebit::prepare_activation({want_q.data(), onebit::QType::Uint8, 120, M}, K, group);
    ThreadedTasks tasks;
    onebit::PreparedActivation a;
    const auto q = onebit::quantize_activation(x.data(), M, K, &constant, group, a, nullptr, tasks.runner());
    EXPECT_EQ(q.scale, 0.02f);
    EXPECT_EQ(q.zero_point, 131);
    expect_same(a, want_a);
    EXPECT_EQ(tasks.runs, 1);  // no range pass: only the rows are split
  }
}

TEST(ActivationQuantize, NoRowsAndNoRunner) {
  onebit::PreparedActivation a;
  const auto q = onebit::quantize_activation(nullptr, 0, 16, nullptr, KGroup::Quads, a, nullptr, {});
  EXPECT_EQ(q.scale, 1.0f);
  EXPECT_EQ(a.M, 0);
  EXPECT_TRUE(a.row_sum.empty());
  const int64_t M = 128, K = 1536;
  const std::vector<float> x = activation(M, K, 7);
  std::vector<uint8_t> want_q(x.size());
  const auto want = onebit::dynamic_quantize(x.data(), x.size(), want_q.data());
  onebit::quantize_activation(x.data(), M, K, nullptr, KGroup::Quads, a, nullptr, {});
  expect_same(a,
              onebit::prepare_activation({want_q.data(), onebit::QType::Uint8, want.zero_point, M}, K, KGroup::Quads));
}

}  // namespace
