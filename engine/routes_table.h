// SPDX-License-Identifier: Apache-2.0
// The routes table ep-probe writes (--save-routes): per (K, N) and measured rows, whether the
// device or the host was faster per call. Text, one entry a line, '#' starts a comment:
//   K N rows host|device        (K, N, rows >= 1)
// This is the one reader of the format; the Node package parses through it too.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace onebit {

enum class Route { Host, Device };

class RoutesTable {
 public:
  // Throws std::invalid_argument naming the file and line of anything malformed, and both lines
  // of one shape and rows given two routes (the same route twice is one entry).
  static RoutesTable load(const std::string& path);
  // The same for a file's text; `file` names it in messages.
  static RoutesTable parse(const std::string& text, const std::string& file);

  // The route of the largest listed rows <= M for (K, N); nullopt where the table says nothing
  // (shape not listed, or M below its smallest listed rows).
  std::optional<Route> route(int64_t K, int64_t N, int64_t M) const;

  void set(int64_t K, int64_t N, int64_t rows, Route r) { routes_[{K, N}][rows] = r; }

  // Every entry: (K, N) → rows → route.
  const std::map<std::pair<int64_t, int64_t>, std::map<int64_t, Route>>& entries() const { return routes_; }

 private:
  std::map<std::pair<int64_t, int64_t>, std::map<int64_t, Route>> routes_;
};

}  // namespace onebit
