// A small JSON reader for the files nanodist reads but does not write: a Hugging Face
// config.json and the header of a .safetensors file. Whole documents into a tree of values;
// numbers keep their text, so 64-bit offsets read back exactly.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace nd {

struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  std::string text;  // a string's value (UTF-8), or a number as written
  std::vector<JsonValue> items;
  std::map<std::string, JsonValue> members;

  // nd::Error (input) naming `what` when the value is not of the kind asked for.
  int64_t as_int(const std::string& what) const;
  double as_double(const std::string& what) const;
  const std::string& as_string(const std::string& what) const;
  // The member `key` of an object, or nullptr when absent (or this is no object).
  const JsonValue* find(const std::string& key) const;
};

// Parses a whole document; nd::Error (input) naming `source` and the byte offset of a syntax error.
JsonValue parse_json(const std::string& text, const std::string& source);

}  // namespace nd
