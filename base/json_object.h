// SPDX-License-Identifier: Apache-2.0
// Reads one flat JSON object whose values are numbers or strings: what a small settings file
// (the cost model's overrides) needs, and no more. Strict JSON (RFC 8259) for what it accepts:
// numbers without leading zeros, strings in UTF-8 with every escape and no control characters.
// Nested objects, arrays, true/false/null are rejected with the key they belong to.
#pragma once
#include <map>
#include <string>
#include <variant>

#include "base/error.h"

namespace onebit::npu {

using JsonScalar = std::variant<double, std::string>;
using JsonObject = std::map<std::string, JsonScalar>;

// `where` names the text in errors (a file name). An error says what is wrong and at which
// line and column, and names the key when it is about a value (quoted as a JSON string, so that
// no byte of a key, such as a NUL from \u0000, cuts the message short); a repeated key is an error.
Result<JsonObject> parse_json_object(const std::string& text, const std::string& where);

}  // namespace onebit::npu
