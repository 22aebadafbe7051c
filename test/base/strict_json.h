// SPDX-License-Identifier: Apache-2.0
// A reference JSON reader for tests, written from RFC 8259 and the I-JSON profile (RFC 7493)
// independently of npu/json_object: any document (arrays, nesting, literals), strings in UTF-8
// with no unpaired surrogate escape, numbers by the grammar and finite as doubles. It is the
// strict reader the EP's JSON writers are checked against, and the other side of a differential
// test of parse_json_object (its own UTF-8 check and number conversion; only the encoding of a
// \u escape is npu's). Simple rather than fast: test inputs are small.
#pragma once
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/utf8.h"

namespace onebit_npu_test {

struct JsonValue;
using JsonArray = std::vector<JsonValue>;
using JsonMembers = std::vector<std::pair<std::string, JsonValue>>;  // in order, repeats kept
struct JsonValue {
  std::variant<std::nullptr_t, bool, double, std::string, std::shared_ptr<JsonArray>, std::shared_ptr<JsonMembers>> v;
};

class StrictJson {
 public:
  // The document `text`, or nullopt when it is not strict JSON (or nests deeper than max_depth).
  static std::optional<JsonValue> parse(const std::string& text, int max_depth = 64) {
    StrictJson p(text, max_depth);
    JsonValue value;
    if (!p.value(value, 0)) return std::nullopt;
    p.space();
    if (p.i_ != text.size()) return std::nullopt;
    return value;
  }

 private:
  StrictJson(const std::string& text, int max_depth) : s_(text), max_depth_(max_depth) {}

  bool value(JsonValue& out, int depth) {
    space();
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '{' || c == '[') {
      if (depth >= max_depth_) return false;
      ++i_;
      return c == '{' ? object(out, depth + 1) : array(out, depth + 1);
    }
    if (c == '"') {
      std::string text;
      if (!string(text)) return false;
      out.v = std::move(text);
      return true;
    }
    for (const auto& [word, literal] :
         {std::pair<const char*, JsonValue>{"null", {nullptr}}, {"true", {true}}, {"false", {false}}}) {
      if (s_.compare(i_, std::char_traits<char>::length(word), word) == 0) {
        i_ += std::char_traits<char>::length(word);
        out = literal;
        return true;
      }
    }
    return number(out);
  }

  bool object(JsonValue& out, int depth) {
    auto members = std::make_shared<JsonMembers>();
    space();
    if (eat('}')) return out.v = members, true;
    do {
      space();
      std::string key;
      JsonValue v;
      if (!string(key)) return false;
      space();
      if (!eat(':') || !value(v, depth)) return false;
      members->emplace_back(std::move(key), std::move(v));
      space();
    } while (eat(','));
    out.v = members;
    return eat('}');
  }

  bool array(JsonValue& out, int depth) {
    auto items = std::make_shared<JsonArray>();
    space();
    if (eat(']')) return out.v = items, true;
    do {
      JsonValue v;
      if (!value(v, depth)) return false;
      items->push_back(std::move(v));
      space();
    } while (eat(','));
    out.v = items;
    return eat(']');
  }

  bool number(JsonValue& out) {
    const size_t begin = i_;
    eat('-');
    if (!eat('0')) {
      if (i_ >= s_.size() || s_[i_] < '1' || s_[i_] > '9') return false;
      digits();
    }
    if (eat('.') && !digits()) return false;
    if (eat('e') || eat('E')) {
      if (!eat('+')) eat('-');
      if (!digits()) return false;
    }
    // strtod (the tests run in the C locale), not the stream npu/json_object converts with.
    const double d = std::strtod(s_.substr(begin, i_ - begin).c_str(), nullptr);
    if (!std::isfinite(d)) return false;  // I-JSON: a number a double holds
    out.v = d;
    return true;
  }

  bool digits() {
    const size_t from = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    return i_ > from;
  }

  bool string(std::string& out) {
    if (!eat('"')) return false;
    while (i_ < s_.size()) {
      const unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') return ++i_, true;
      if (c < 0x20) return false;
      if (c != '\\') {
        const size_t n = utf8_length(i_);
        if (n == 0) return false;
        out.append(s_, i_, n);
        i_ += n;
        continue;
      }
      if (++i_ >= s_.size()) return false;
      const char e = s_[i_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          long cp = hex4();
          if (cp < 0 || (cp >= 0xDC00 && cp <= 0xDFFF)) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (!eat('\\') || !eat('u')) return false;
            const long low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          onebit::npu::append_utf8(out, static_cast<char32_t>(cp));
          break;
        }
        default:
          return false;
      }
    }
    return false;
  }

  long hex4() {
    if (i_ + 4 > s_.size()) return -1;
    long v = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = s_[i_++];
      const int d = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
      if (d < 0) return -1;
      v = v * 16 + d;
    }
    return v;
  }

  // The length of the well-formed UTF-8 sequence at s_[at], or 0: decoded and range-checked
  // (rather than by the table of valid bytes npu/utf8 uses).
  size_t utf8_length(size_t at) const {
    const unsigned char b = static_cast<unsigned char>(s_[at]);
    const size_t n = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || at + n > s_.size()) return 0;
    long cp = n == 1 ? b : b & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
      const unsigned char t = static_cast<unsigned char>(s_[at + k]);
      if ((t & 0xC0) != 0x80) return 0;
      cp = (cp << 6) | (t & 0x3F);
    }
    const long smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < smallest[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
  }

  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }

  bool eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }

  const std::string& s_;
  const int max_depth_;
  size_t i_ = 0;
};

}  // namespace onebit_npu_test
