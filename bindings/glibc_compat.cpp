// SPDX-License-Identifier: Apache-2.0
// Local stand-ins for two symbols that gcc 12's libstdc++ headers make binaries import from a newer
// runtime than ORT needs (glibc 2.32, libstdc++ 3.4.29). Hidden: each binary keeps its own copy.
#include <new>

// Read by libstdc++'s inline atomics to skip locking in single-threaded processes; 0 means "maybe
// threaded", which is always correct (just never takes the shortcut).
extern "C" {
__attribute__((visibility("hidden"))) char __libc_single_threaded = 0;
}

namespace std {
// Thrown by new[] with a bad length; older libstdc++ throws std::bad_array_new_length the same way.
[[noreturn]] __attribute__((visibility("hidden"))) void __throw_bad_array_new_length() { throw bad_array_new_length(); }
}  // namespace std
