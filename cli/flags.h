// The one flag layer of the nanodist binary: every subcommand declares a FlagSet (each flag with
// its default and help), and the dispatcher parses argv with it through cxxopts, plus an optional
// `--config FILE` (lines `key = value`; the file sets defaults, the command line overrides it).
// Values stay text until a typed getter converts them, so a bad value is an input error naming
// the key and where it came from (command line or file:line).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "train/config_value.h"

namespace nd::cli {

using train::FlagType;

struct FlagSpec {
  std::string name;           // dash-separated, without the leading dashes: "n-layer"
  std::string default_value;  // text; "" for no default
  std::string help;
  std::string group;          // heading in --help
  FlagType type = FlagType::String;  // Bool: the bare flag means true; also takes true/false
  bool repeated = false;      // may be given several times (--input a --input b)
  std::vector<std::string> aliases;  // other names for it, on the command line and in config files
  bool hidden = false;  // read (a shared config file may set it) but not listed in --help
};

// A FlagSpec in one call: flag("iters", "20", "timed iterations", FlagType::Int).
FlagSpec flag(const char* name, const char* default_value, const char* help, FlagType type = FlagType::String,
              bool repeated = false);

struct FlagValue {
  std::vector<std::string> texts;  // one per occurrence (defaults: one)
  std::string origin;              // "default", "command line" or "FILE:LINE"
};

class ParsedFlags {
 public:
  bool help_requested = false;
  bool verbose = false;  // --verbose: errors also name the failing check and file:line
  int64_t threads = -1;  // --threads N (every command): -1 = not given, 0 = the physical cores

  bool has(const std::string& name) const;  // given on the command line or in the file
  std::string get_string(const std::string& name) const;
  std::vector<std::string> get_strings(const std::string& name) const;  // every occurrence
  int64_t get_int(const std::string& name) const;
  double get_double(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  // Where the value came from, for error messages: "--lr on the command line", "'lr' at x.conf:4".
  std::string origin(const std::string& name) const;

  std::map<std::string, FlagValue> values;  // every flag of the table, defaults included
  std::map<std::string, bool> given;

 private:
  const FlagValue& find(const std::string& name) const;
};

class FlagSet {
 public:
  FlagSet(std::string command, std::string usage) : command_(std::move(command)), usage_(std::move(usage)) {}
  FlagSet& add(FlagSpec spec);
  // Starts a heading in --help: flags added after it are listed under `group` unless they name one.
  FlagSet& group(std::string group);
  // Adds `--config FILE`, read before the command line applies its overrides.
  FlagSet& allow_config_file();

  // argv[0] is the subcommand name; every later element is a flag. Unknown flags, stray
  // arguments, unknown config keys and values that do not parse as the flag's type are input
  // errors (naming the nearest known flag). Every set also takes --help (-h), --verbose and
  // --threads; underscores read as dashes, on the command line as in the file.
  ParsedFlags parse(int argc, const char* const* argv) const;
  // Same shape for every subcommand: usage line, flags by group with type and default, then the
  // flags every subcommand takes.
  std::string help() const;
  const std::string& command() const { return command_; }
  const std::vector<FlagSpec>& specs() const { return specs_; }
  // The flag called `name` or answering to it as an alias; nullptr if none.
  const FlagSpec* find(const std::string& name) const;

 private:
  // The known flag nearest to an unknown name ("" when none is near); "; did you mean 'lr'?".
  std::string nearest(const std::string& name) const;
  std::string suggestion(const std::string& name) const;
  std::string known_spelling(const std::string& arg) const;
  void read_config_file(const std::string& path, ParsedFlags& out) const;

  std::string command_;
  std::string usage_;
  std::string group_;
  std::vector<FlagSpec> specs_;
  bool config_file_ = false;
};

}  // namespace nd::cli
