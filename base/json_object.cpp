// SPDX-License-Identifier: Apache-2.0
#include "base/json_object.h"

#include <cctype>
#include <cmath>
#include <locale>
#include <sstream>

#include "base/utf8.h"

namespace onebit::npu {

namespace {

class Reader {
 public:
  Reader(const std::string& text, const std::string& where) : text_(text), where_(where) {}

  Result<JsonObject> object() {
    JsonObject out;
    skip_space();
    if (!take('{')) return fail("expected '{' (the file must hold one JSON object)");
    skip_space();
    if (take('}')) return finish(std::move(out));
    for (;;) {
      skip_space();
      std::string key;
      if (Status st = string(key, "a key"); !st) return st.error();
      skip_space();
      if (!take(':')) return fail("expected ':' after key " + json_string(key));
      skip_space();
      JsonScalar value;
      if (Status s = scalar(key, value); !s) return s.error();
      if (!out.emplace(key, std::move(value)).second) return fail("key " + json_string(key) + " appears twice");
      skip_space();
      if (take('}')) return finish(std::move(out));
      if (!take(',')) return fail("expected ',' or '}' after the value of " + json_string(key));
    }
  }

 private:
  Result<JsonObject> finish(JsonObject out) {
    skip_space();
    if (pos_ != text_.size()) return fail("unexpected text after the object");
    return out;
  }

  Status scalar(const std::string& key, JsonScalar& value) {
    if (pos_ < text_.size() && text_[pos_] == '"') {
      std::string s;
      if (Status st = string(s, "the string value of " + json_string(key)); !st) return st;
      value = std::move(s);
      return {};
    }
    // A JSON number, strictly: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, converted in the
    // classic locale (std::from_chars for double needs a newer libstdc++ than the shipped binaries
    // may use).
    const size_t begin = pos_;
    auto digits = [&] {
      const size_t from = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      return pos_ > from;
    };
    take('-');
    bool ok = take('0') || digits();
    if (ok && take('.')) ok = digits();
    if (ok && (take('e') || take('E'))) {
      if (!take('+')) take('-');
      ok = digits();
    }
    if (!ok || (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])))) {
      pos_ = begin;
      return fail("the value of " + json_string(key) + " must be a number or a string");
    }
    std::istringstream in(text_.substr(begin, pos_ - begin));
    in.imbue(std::locale::classic());
    double number = 0;
    if (!(in >> number) || !std::isfinite(number)) return fail("the value of " + json_string(key) + " is out of range");
    value = number;
    return {};
  }

  // A JSON string: UTF-8, no control characters, every escape (\uXXXX with surrogate pairs).
  Status string(std::string& out, const std::string& what) {
    if (!take('"')) return fail("expected " + what + " in double quotes");
    const size_t begin = pos_;
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (c == '"') {
        if (!is_valid_utf8(out)) return at(begin, what + " is not valid UTF-8");
        return {};
      }
      if (static_cast<unsigned char>(c) < 0x20) return at(pos_ - 1, what + " holds a control character");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) break;
      const char e = text_[pos_++];
      static const std::string kPlain = "\"\\/bfnrt", kMeaning = "\"\\/\b\f\n\r\t";
      if (const size_t i = kPlain.find(e); i != std::string::npos) {
        out += kMeaning[i];
        continue;
      }
      if (e != 'u') return at(pos_ - 2, what + " has an invalid escape \\" + std::string(1, e));
      char32_t cp = 0;
      if (!hex4(cp)) return at(pos_, what + " has an invalid \\u escape");
      if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate: its low one must follow
        char32_t low = 0;
        if (!take('\\') || !take('u') || !hex4(low) || low < 0xDC00 || low > 0xDFFF)
          return at(pos_, what + " has an unpaired surrogate escape");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
      } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
        return at(pos_, what + " has an unpaired surrogate escape");
      }
      append_utf8(out, cp);
    }
    return fail(what + " is not terminated");
  }

  bool hex4(char32_t& cp) {
    if (pos_ + 4 > text_.size()) return false;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[pos_++];
      if (!std::isxdigit(static_cast<unsigned char>(h))) return false;
      cp = cp * 16 +
           static_cast<char32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (h | 0x20) - 'a' + 10);
    }
    return true;
  }

  Error at(size_t pos, const std::string& what) {
    pos_ = pos;
    return fail(what);
  }

  bool take(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  // JSON's whitespace only (not \f or \v, which isspace also takes).
  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  Error fail(const std::string& what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return make_error(ErrorCode::kInvalidArgument,
                      where_ + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + what);
  }

  const std::string& text_;
  const std::string& where_;
  size_t pos_ = 0;
};

}  // namespace

Result<JsonObject> parse_json_object(const std::string& text, const std::string& where) {
  return Reader(text, where).object();
}

}  // namespace onebit::npu
