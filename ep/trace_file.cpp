// SPDX-License-Identifier: Apache-2.0
#include "trace_file.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <locale>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/utf8.h"
#include "kernels/gemm_q8_kernels.h"

namespace onebit {

namespace {

// Set when the library loads, so that it precedes every time a call takes (a first reading at the
// end of a call would put that call's start before it).
const auto trace_origin = std::chrono::steady_clock::now();

// "<stem>.json" for the n-th session writing `path` in this process, then "<stem>.2.json", ...
std::string numbered(const std::string& path, int n) {
  if (n == 1) return path;
  const bool json = path.size() > 5 && path.ends_with(".json");
  return (json ? path.substr(0, path.size() - 5) : path) + "." + std::to_string(n) + ".json";
}

// Creates the first numbered file of `path` no session of this process has claimed (an existing
// file, or the file a link there names, is left as it is: the trace replaces the name whole at
// release), claims it and returns its name. Claims are by name, not by the name asked for: a
// session asking for "t.2.json" while another writes it gets "t.2.2.json" (a count per asked name
// gave it "t.2.json", and the later release overwrote the other's trace). A name is claimed only
// when its file is created, so a refused path stays refused for every later session (it took the
// number and the next session silently wrote "<stem>.2.json" beside it).
std::string create_numbered(const std::string& path) {
  static std::mutex mutex;
  static std::set<std::string> claimed;  // every name a trace of this process was given
  std::lock_guard lock(mutex);
  int n = 1;
  while (claimed.count(numbered(path, n))) ++n;
  const std::string name = numbered(path, n);
  auto opened = npu::open_regular_file(name, npu::FileAccess::kWriteCreate);
  if (!opened) throw std::invalid_argument("onebit: cannot create trace file: " + opened.error().reason);
  claimed.insert(name);
  return name;
}

// `path` (absolute) without "." and empty components, each ".." taking the one before it away.
std::string lexically_normal(const std::string& path) {
  std::vector<std::string> parts;
  std::istringstream in(path);
  for (std::string part; std::getline(in, part, '/');) {
    if (part.empty() || part == ".") continue;
    if (part != "..")
      parts.push_back(std::move(part));
    else if (!parts.empty())
      parts.pop_back();
  }
  std::string normal;
  for (const std::string& part : parts) normal += "/" + part;
  return normal.empty() ? "/" : normal;
}

// The absolute, normalised name of `path`, resolved against the working directory of this moment:
// its folder with ".", ".." and symbolic links resolved (realpath, when it exists), then its file
// name as given. One file spelt two ways ("t.json", "./t.json", "d/../t.json") is one key of the
// numbering; the file name itself is not resolved, so a link there is replaced as before.
// (Not std::filesystem: it needs a newer libstdc++ than ORT's.)
std::string absolute(const std::string& path) {
  std::string given = path;
  if (!path.starts_with("/")) {
    char cwd[4096];
    if (::getcwd(cwd, sizeof cwd) == nullptr)
      throw std::invalid_argument("onebit: trace file '" + path +
                                  "': cannot resolve against the working directory: " + std::strerror(errno));
    given = std::string(cwd) + "/" + path;
  }
  // A name ending in "/", "." or ".." is no file: left as given, it is refused when it is created.
  if (given.ends_with("/") || given.ends_with("/.") || given.ends_with("/..")) return given;
  const std::string normal = lexically_normal(given);
  const size_t slash = normal.rfind('/');
  const std::string folder = slash == 0 ? "/" : normal.substr(0, slash);
  char resolved[PATH_MAX];
  if (::realpath(folder.c_str(), resolved) == nullptr) return normal;
  const std::string base = resolved;
  return (base == "/" ? "" : base) + normal.substr(slash);
}

}  // namespace

TraceFile::TraceFile(const std::string& path, std::string cost_model)
    : path_(create_numbered(absolute(path))), cost_model_(std::move(cost_model)) {}

uint64_t trace_clock_us(std::chrono::steady_clock::time_point at) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(at - trace_origin).count());
}

void TraceFile::record(const TraceEvent& event) {
  TraceEvent e = event;
  e.thread = std::hash<std::thread::id>{}(std::this_thread::get_id()) % 100000;
  std::lock_guard lock(mutex_);
  if (events_.size() < kMaxEvents)
    events_.push_back(e);
  else
    ++dropped_;
}

void TraceFile::write(const Counters& counters) const {
  std::lock_guard lock(mutex_);
  std::ostringstream out;
  out.imbue(std::locale::classic());  // JSON numbers, whatever global locale the host set
  const auto pid = static_cast<long>(getpid());
  out << "{\"traceEvents\":[";
  for (size_t i = 0; i < events_.size(); ++i) {
    const TraceEvent& e = events_[i];
    const std::string shape = std::to_string(e.K) + "x" + std::to_string(e.N);
    out << (i ? ",\n" : "\n") << "{\"name\":" << npu::json_string("gemm_q8 " + shape) << ",\"cat\":\""
        << (e.on_device ? "device" : "host") << "\",\"ph\":\"X\",\"ts\":" << e.start_us << ",\"dur\":" << e.duration_us
        << ",\"pid\":" << pid << ",\"tid\":" << e.thread << ",\"args\":{\"node\":" << npu::json_string(e.node)
        << ",\"K\":" << e.K << ",\"N\":" << e.N << ",\"rows\":" << e.rows << ",\"route\":\""
        << (e.on_device ? "device" : "host") << "\",\"reason\":" << npu::json_string(e.reason)
        << ",\"launches\":" << e.launches << ",\"a_bytes\":" << e.a_bytes << ",\"c_bytes\":" << e.c_bytes
        << ",\"c_whole\":" << (e.c_whole ? "true" : "false");
    // JSON has no inf or NaN: a time that is not a finite number is left out.
    if (std::isfinite(e.device_us) && e.device_us >= 0) out << ",\"device_us\":" << e.device_us;
    if (std::isfinite(e.modelled_us) && e.modelled_us >= 0) out << ",\"modelled_us\":" << e.modelled_us;
    out << "}}";
  }
  out << "\n],\"otherData\":{\"onebit\":" << counters.summary_json() << ",\"dropped_events\":" << dropped_;
  if (!cost_model_.empty()) out << ",\"cost_model\":" << npu::json_string(cost_model_);
  out << ",\"host_kernel\":" << npu::json_string(selected_kernel_name());
  out << "}}\n";
  const std::string text = std::move(out).str();
  // Whole or not at all (base/regular_file.h): a file that two sessions or processes name (by one
  // spelling or another) ends up holding one whole trace, never two interleaved.
  if (npu::Status written = npu::write_file_atomically(path_, text.data(), text.size()); !written)
    throw std::runtime_error("onebit: failed writing trace file: " + written.error().reason);
}

}  // namespace onebit
