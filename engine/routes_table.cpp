// SPDX-License-Identifier: Apache-2.0
#include "engine/routes_table.h"

#include <sstream>
#include <stdexcept>
#include <tuple>

#include "base/regular_file.h"

namespace onebit {

RoutesTable RoutesTable::load(const std::string& path) {
  // A routes file is a few lines per probed shape; a few MiB is far beyond any real one.
  constexpr size_t kMaxRoutesFileBytes = 4 << 20;
  auto bytes = npu::read_regular_file(path, kMaxRoutesFileBytes);
  if (!bytes) throw std::invalid_argument("onebit: cannot read routes file: " + bytes.error().reason);
  return parse(std::string(bytes->begin(), bytes->end()), path);
}

RoutesTable RoutesTable::parse(const std::string& text, const std::string& path) {
  std::istringstream in(text);
  RoutesTable table;
  std::map<std::tuple<int64_t, int64_t, int64_t>, int> line_of;  // the line that set each entry
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string entry = line.substr(0, line.find('#'));
    std::istringstream fields(entry);
    int64_t K = 0, N = 0, rows = 0;
    std::string route, extra;
    if (entry.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank or comment-only line
    const bool ok = (fields >> K >> N >> rows >> route) && !(fields >> extra) && K > 0 && N > 0 && rows > 0 &&
                    (route == "host" || route == "device");
    if (!ok)
      throw std::invalid_argument("onebit: routes file '" + path + "' line " + std::to_string(number) +
                                  ": expected 'K N rows host|device' with K, N, rows >= 1, got '" + line + "'");
    // One (shape, rows) with two routes has no answer: which line wins would be an accident.
    const Route chosen = route == "device" ? Route::Device : Route::Host;
    const auto [earlier, first] = line_of.try_emplace({K, N, rows}, number);
    if (!first && table.routes_[{K, N}][rows] != chosen) {
      const std::string a = std::to_string(earlier->second), b = std::to_string(number);
      throw std::invalid_argument("onebit: routes file '" + path + "' lines " + a + " and " + b +
                                  " contradict each other: K=" + std::to_string(K) + " N=" + std::to_string(N) +
                                  " rows=" + std::to_string(rows) + " is " +
                                  (chosen == Route::Device ? "host" : "device") + " on line " + a + " and " + route +
                                  " on line " + b);
    }
    table.set(K, N, rows, chosen);
  }
  return table;
}

std::optional<Route> RoutesTable::route(int64_t K, int64_t N, int64_t M) const {
  auto shape = routes_.find({K, N});
  if (shape == routes_.end()) return std::nullopt;
  auto above = shape->second.upper_bound(M);
  if (above == shape->second.begin()) return std::nullopt;
  return std::prev(above)->second;
}

}  // namespace onebit
