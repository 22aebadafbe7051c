// SPDX-License-Identifier: Apache-2.0
// UTF-8 as JSON requires it: what the files the EP reads must hold, and what the JSON it writes
// (trace, probe output) is made of whatever bytes it is handed (a node name, a cost-model field).
#pragma once
#include <string>
#include <string_view>

namespace onebit::npu {

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool is_valid_utf8(std::string_view text);

// `text` with each byte that does not start a well-formed sequence replaced by U+FFFD.
std::string valid_utf8(std::string_view text);

// `text` as a JSON string literal, quotes included, whatever its bytes: invalid UTF-8 as U+FFFD,
// control characters as \u escapes (also safe in an error message: no NUL ends it).
std::string json_string(std::string_view text);

// The UTF-8 bytes of code point `cp` (at most U+10FFFF, not a surrogate) appended to `out`.
void append_utf8(std::string& out, char32_t cp);

}  // namespace onebit::npu
