// The type of a config value and its strict parsing from text. TrainConfig's fields carry it
// (checkpoints record every field with its type), and the command line (cli/flags.h) checks each
// flag's text against it; a bad value is an input error naming `what` (the flag and its origin).
#pragma once
#include <cstdint>
#include <string>

namespace nd::train {

enum class FlagType { String, Int, Float, Bool };

// Text to value, strictly (the whole text must be consumed, surrounding blanks aside).
int64_t parse_int_value(const std::string& text, const std::string& what);
double parse_double_value(const std::string& text, const std::string& what);
bool parse_bool_value(const std::string& text, const std::string& what);  // true|false|1|0|yes|no|on|off

}  // namespace nd::train
