// SPDX-License-Identifier: Apache-2.0
#include "npu/json_object.h"

#include <cctype>
#include <locale>
#include <sstream>

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
      if (!string(key)) return fail("expected a key in double quotes");
      skip_space();
      if (!take(':')) return fail("expected ':' after key \"" + key + "\"");
      skip_space();
      JsonScalar value;
      if (Status s = scalar(key, value); !s) return s.error();
      if (!out.emplace(key, std::move(value)).second) return fail("key \"" + key + "\" appears twice");
      skip_space();
      if (take('}')) return finish(std::move(out));
      if (!take(',')) return fail("expected ',' or '}' after the value of \"" + key + "\"");
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
      if (!string(s)) return fail("unterminated string value of \"" + key + "\"");
      value = std::move(s);
      return {};
    }
    // A JSON number: -?digits(.digits)?([eE][+-]?digits)?, converted in the classic locale
    // (std::from_chars for double needs a newer libstdc++ than the shipped binaries may use).
    const size_t begin = pos_;
    auto digits = [&] {
      const size_t from = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      return pos_ > from;
    };
    take('-');
    bool ok = digits();
    if (ok && take('.')) ok = digits();
    if (ok && (take('e') || take('E'))) {
      if (!take('+')) take('-');
      ok = digits();
    }
    if (!ok) {
      pos_ = begin;
      return fail("the value of \"" + key + "\" must be a number or a string");
    }
    std::istringstream in(text_.substr(begin, pos_ - begin));
    in.imbue(std::locale::classic());
    double number = 0;
    if (!(in >> number)) return fail("the value of \"" + key + "\" is out of range");
    value = number;
    return {};
  }

  // A string without escapes other than \" and \\ (keys and names need no more).
  bool string(std::string& out) {
    if (!take('"')) return false;
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (c == '"') return true;
      if (c == '\n') return false;
      if (c == '\\') {
        if (pos_ >= text_.size() || (text_[pos_] != '"' && text_[pos_] != '\\')) return false;
        out += text_[pos_++];
      } else {
        out += c;
      }
    }
    return false;
  }

  bool take(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
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
