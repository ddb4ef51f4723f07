// Recursive descent over RFC 8259 JSON; \u escapes (surrogate pairs too) become UTF-8.
#include "data/json_value.h"

#include <cerrno>
#include <cstdlib>

#include "tensor/error.h"

namespace nd {
namespace {

// Deeper than any config or header nanodist reads; keeps a hostile file from exhausting the stack.
constexpr int kMaxDepth = 64;

class Parser {
 public:
  Parser(const std::string& text, const std::string& source) : s_(text), source_(source) {}

  JsonValue document() {
    JsonValue v = value(0);
    skip_space();
    if (at_ < s_.size()) fail("unexpected text after the document");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    ND_FAIL_INPUT(source_ << " is not valid JSON: " << why << " at byte " << at_);
  }
  void skip_space() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r')) ++at_;
  }
  bool take(char c) {
    skip_space();
    if (at_ < s_.size() && s_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!take(c)) fail(std::string("expected '") + c + "'");
  }
  bool take_word(const char* word) {
    const std::string w(word);
    if (s_.compare(at_, w.size(), w) != 0) return false;
    at_ += w.size();
    return true;
  }

  JsonValue value(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth));
    skip_space();
    if (at_ >= s_.size()) fail("unexpected end");
    JsonValue v;
    const char c = s_[at_];
    if (c == '{') {
      ++at_;
      v.kind = JsonValue::Kind::Object;
      if (take('}')) return v;
      do {
        skip_space();
        if (at_ >= s_.size() || s_[at_] != '"') fail("expected a member name");
        std::string key = string();
        expect(':');
        v.members[key] = value(depth + 1);
      } while (take(','));
      expect('}');
    } else if (c == '[') {
      ++at_;
      v.kind = JsonValue::Kind::Array;
      if (take(']')) return v;
      do v.items.push_back(value(depth + 1));
      while (take(','));
      expect(']');
    } else if (c == '"') {
      v.kind = JsonValue::Kind::String;
      v.text = string();
    } else if (take_word("true")) {
      v.kind = JsonValue::Kind::Bool;
      v.boolean = true;
    } else if (take_word("false")) {
      v.kind = JsonValue::Kind::Bool;
    } else if (take_word("null")) {
      v.kind = JsonValue::Kind::Null;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      const size_t begin = at_;
      while (at_ < s_.size() && std::string("+-.eE0123456789").find(s_[at_]) != std::string::npos) ++at_;
      v.kind = JsonValue::Kind::Number;
      v.text = s_.substr(begin, at_ - begin);
    } else {
      fail(std::string("unexpected character '") + c + "'");
    }
    return v;
  }

  unsigned hex4() {
    if (at_ + 4 > s_.size()) fail("short \\u escape");
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = s_[at_++];
      code <<= 4;
      if (h >= '0' && h <= '9') code |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f') code |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') code |= static_cast<unsigned>(h - 'A' + 10);
      else fail("bad \\u escape");
    }
    return code;
  }

  static void append_utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  // At the opening quote; returns the decoded string and leaves `at_` after the closing quote.
  std::string string() {
    ++at_;
    std::string out;
    while (true) {
      if (at_ >= s_.size()) fail("unterminated string");
      const char c = s_[at_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= s_.size()) fail("unterminated escape");
      const char e = s_[at_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned code = hex4();
          if (code >= 0xD800 && code < 0xDC00 && s_.compare(at_, 2, "\\u") == 0) {
            at_ += 2;
            const unsigned low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("bad surrogate pair");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, code);
          break;
        }
        default: fail(std::string("bad escape '\\") + e + "'");
      }
    }
  }

  const std::string& s_;
  const std::string& source_;
  size_t at_ = 0;
};

}  // namespace

int64_t JsonValue::as_int(const std::string& what) const {
  ND_CHECK_INPUT(kind == Kind::Number, what << " must be a number");
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  ND_CHECK_INPUT(errno == 0 && end != nullptr && *end == '\0', what << " must be an integer, got " << text);
  return static_cast<int64_t>(v);
}

double JsonValue::as_double(const std::string& what) const {
  ND_CHECK_INPUT(kind == Kind::Number, what << " must be a number");
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  ND_CHECK_INPUT(end != nullptr && *end == '\0', what << " must be a number, got " << text);
  return v;
}

const std::string& JsonValue::as_string(const std::string& what) const {
  ND_CHECK_INPUT(kind == Kind::String, what << " must be a string");
  return text;
}

const JsonValue* JsonValue::find(const std::string& key) const {
  if (kind != Kind::Object) return nullptr;
  auto it = members.find(key);
  return it == members.end() ? nullptr : &it->second;
}

JsonValue parse_json(const std::string& text, const std::string& source) { return Parser(text, source).document(); }

}  // namespace nd
