// Flag parsing: cxxopts reads argv (every value as text, in order of occurrence), a config file
// supplies defaults, and each value is checked against its flag's type as it is read.
#include "cli/flags.h"

#include <cxxopts.hpp>
#include <fstream>
#include <sstream>

#include "cli/flag_idioms.h"
#include "cli/flag_suggestion.h"
#include "tensor/error.h"

namespace nd::cli {
namespace {

using train::parse_bool_value;
using train::parse_double_value;
using train::parse_int_value;

std::string trim(const std::string& s) {
  size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  size_t end = s.find_last_not_of(" \t\r\n");
  return s.substr(begin, end - begin + 1);
}

// Config keys may use nanoGPT's underscores; flags use dashes.
std::string normalize_key(std::string key) {
  for (char& c : key)
    if (c == '_') c = '-';
  return key;
}

void check_type(const FlagSpec& spec, const std::string& text, const std::string& origin) {
  std::string what = "'" + spec.name + "' " + origin;
  switch (spec.type) {
    case FlagType::Int: parse_int_value(text, what); break;
    case FlagType::Float: parse_double_value(text, what); break;
    case FlagType::Bool: parse_bool_value(text, what); break;
    case FlagType::String: break;
  }
}

const char* type_hint(FlagType type) {
  switch (type) {
    case FlagType::Int: return "N";
    case FlagType::Float: return "X";
    case FlagType::Bool: return "[true|false]";
    case FlagType::String: return "TEXT";
  }
  return "";
}

}  // namespace

FlagSpec flag(const char* name, const char* default_value, const char* help, FlagType type, bool repeated) {
  FlagSpec s;
  s.name = name;
  s.default_value = default_value;
  s.help = help;
  s.type = type;
  s.repeated = repeated;
  return s;
}

const FlagValue& ParsedFlags::find(const std::string& name) const {
  auto it = values.find(name);
  ND_CHECK(it != values.end(), "no flag --" << name);
  return it->second;
}

bool ParsedFlags::has(const std::string& name) const {
  auto it = given.find(name);
  return it != given.end() && it->second;
}

std::string ParsedFlags::get_string(const std::string& name) const {
  const FlagValue& v = find(name);
  return v.texts.empty() ? "" : v.texts.back();
}

std::vector<std::string> ParsedFlags::get_strings(const std::string& name) const { return find(name).texts; }

std::string ParsedFlags::origin(const std::string& name) const {
  const FlagValue& v = find(name);
  if (v.origin == "command line") return "--" + name + " on the command line";
  if (v.origin == "default") return "--" + name + " (default)";
  return "'" + name + "' at " + v.origin;
}

int64_t ParsedFlags::get_int(const std::string& name) const { return parse_int_value(get_string(name), origin(name)); }

double ParsedFlags::get_double(const std::string& name) const {
  return parse_double_value(get_string(name), origin(name));
}

bool ParsedFlags::get_bool(const std::string& name) const { return parse_bool_value(get_string(name), origin(name)); }

FlagSet& FlagSet::add(FlagSpec spec) {
  for (const std::string& name : spec.aliases)
    ND_CHECK(find(name) == nullptr && name != spec.name, "flag alias --" << name << " declared twice");
  ND_CHECK(find(spec.name) == nullptr && spec.name != "help" && spec.name != "verbose" && spec.name != "config",
           "flag --" << spec.name << " declared twice");
  if (spec.group.empty()) spec.group = group_;
  specs_.push_back(std::move(spec));
  return *this;
}

FlagSet& FlagSet::group(std::string group) {
  group_ = std::move(group);
  return *this;
}

FlagSet& FlagSet::allow_config_file() {
  config_file_ = true;
  return *this;
}

std::string FlagSet::nearest(const std::string& name) const {
  std::vector<std::string> known;
  for (const FlagSpec& s : specs_) known.push_back(s.name);
  return nearest_flag(name, known);
}

std::string FlagSet::suggestion(const std::string& name) const {
  const std::string near = nearest(name);
  return near.empty() ? "" : "; did you mean '" + near + "'?";
}

// `--n_layer 4` reads as `--n-layer 4` (config files take both spellings too), `-h` as `--help`;
// any other flag this command does not know is an input error: what to do instead for a nanoGPT
// or llm.c idiom (flag_idioms.h), else the nearest known flag.
std::string FlagSet::known_spelling(const std::string& arg) const {
  if (arg == "-h") return "--help";
  if (arg.rfind("--", 0) != 0) {
    // llm.c's short flags (-b 64); a value (-1, a prompt) is no idiom and stays as it is.
    const std::string idiom = arg.size() > 1 && arg[0] == '-' ? flag_idiom(arg, *this) : "";
    ND_CHECK_INPUT(idiom.empty(), idiom << " (see nanodist " << command_ << " --help)");
    return arg;
  }
  const size_t eq = arg.find('=');
  const std::string name = normalize_key(arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2));
  const bool general = name == "help" || name == "verbose" || name == "threads" || (name == "config" && config_file_);
  if (!general && find(name) == nullptr) {
    const std::string idiom = flag_idiom(arg, *this);
    ND_CHECK_INPUT(idiom.empty(), idiom << " (see nanodist " << command_ << " --help)");
    const std::string near = nearest(name);
    ND_FAIL_INPUT("unknown flag " << arg.substr(0, eq) << " for nanodist " << command_
                                  << (near.empty() ? "" : "; did you mean --" + near + "?") << " (see nanodist "
                                  << command_ << " --help)");
  }
  return "--" + name + (eq == std::string::npos ? "" : arg.substr(eq));
}

const FlagSpec* FlagSet::find(const std::string& name) const {
  for (const FlagSpec& s : specs_) {
    if (s.name == name) return &s;
    for (const std::string& alias : s.aliases)
      if (alias == name) return &s;
  }
  return nullptr;
}

void FlagSet::read_config_file(const std::string& path, ParsedFlags& out) const {
  std::ifstream in(path);
  ND_CHECK_INPUT(in.good(), "cannot open config file " << path << " (check the path given to --config)");
  std::string line;
  int line_number = 0;
  std::map<std::string, bool> seen;
  while (std::getline(in, line)) {
    ++line_number;
    std::string where = path + ":" + std::to_string(line_number);
    std::string body = trim(line.substr(0, line.find('#')));
    if (body.empty()) continue;
    size_t eq = body.find('=');
    ND_CHECK_INPUT(eq != std::string::npos, "expected 'key = value' at " << where << ", got '" << body << "'");
    std::string key = normalize_key(trim(body.substr(0, eq)));
    std::string value = trim(body.substr(eq + 1));
    const FlagSpec* spec = find(key);
    ND_CHECK_INPUT(spec != nullptr, "unknown key '" << key << "' at " << where << suggestion(key)
                                                    << " (see nanodist " << command_ << " --help)");
    check_type(*spec, value, "at " + where);
    const std::string idiom = value_idiom(spec->name, value);
    ND_CHECK_INPUT(idiom.empty(), idiom << " (at " << where << ")");
    FlagValue& slot = out.values[spec->name];
    if (!seen[spec->name] || !spec->repeated) slot.texts.clear();
    slot.texts.push_back(value);
    slot.origin = where;
    seen[spec->name] = true;
    out.given[spec->name] = true;
  }
}

ParsedFlags FlagSet::parse(int argc, const char* const* argv) const {
  // A boolean flag followed by a word takes it as its value (`--bias false`); cxxopts reads a
  // bare boolean flag as true and never looks at the next argument, so join the two. No
  // subcommand takes positional arguments, so a word after a switch can only be its value (a
  // bad one is then reported against the flag).
  std::vector<std::string> args;
  for (int i = 0; i < argc; ++i) {
    std::string a = i > 0 ? known_spelling(argv[i]) : std::string(argv[i]);
    if (i > 0 && a.rfind("--", 0) == 0 && a.find('=') == std::string::npos && i + 1 < argc) {
      const FlagSpec* spec = find(a.substr(2));
      if (spec && spec->type == FlagType::Bool && std::string(argv[i + 1]).rfind("-", 0) != 0) {
        args.push_back(a + "=" + argv[i + 1]);
        ++i;
        continue;
      }
    }
    args.push_back(a);
  }
  std::vector<const char*> cargs;
  for (const std::string& a : args) cargs.push_back(a.c_str());

  cxxopts::Options options("nanodist " + command_, usage_);
  auto adder = options.add_options();
  adder("help", "list every flag with its default", cxxopts::value<std::string>()->implicit_value("true"));
  adder("verbose", "errors also name the failing check", cxxopts::value<std::string>()->implicit_value("true"));
  adder("threads", "CPU threads", cxxopts::value<std::string>());
  if (config_file_) adder("config", "config file of 'key = value' lines", cxxopts::value<std::string>());
  for (const FlagSpec& s : specs_) {
    auto value = cxxopts::value<std::string>();
    if (s.type == FlagType::Bool) value->implicit_value("true");
    adder(s.name, s.help, value);
    for (const std::string& alias : s.aliases) {
      auto same = cxxopts::value<std::string>();
      if (s.type == FlagType::Bool) same->implicit_value("true");
      adder(alias, "alias of --" + s.name, same);
    }
  }

  ParsedFlags out;
  for (const FlagSpec& s : specs_) {
    out.values[s.name] = FlagValue{{}, "default"};
    if (!s.default_value.empty() || !s.repeated) out.values[s.name].texts.push_back(s.default_value);
  }

  std::vector<cxxopts::KeyValue> occurrences;
  try {
    cxxopts::ParseResult result = options.parse(static_cast<int>(cargs.size()), cargs.data());
    occurrences = result.arguments();
    ND_CHECK_INPUT(result.unmatched().empty(),
                   "unexpected argument '" << result.unmatched().front() << "' to nanodist " << command_
                                           << " (flags are --name value; see --help)");
  } catch (const cxxopts::exceptions::exception& e) {
    ND_FAIL_INPUT("nanodist " << command_ << ": " << e.what() << " (see nanodist " << command_ << " --help)");
  }

  for (const auto& kv : occurrences) {
    if (kv.key() == "help") out.help_requested = parse_bool_value(kv.value(), "--help");
    if (kv.key() == "verbose") out.verbose = parse_bool_value(kv.value(), "--verbose");
    if (kv.key() == "threads") {
      out.threads = parse_int_value(kv.value(), "--threads on the command line");
      ND_CHECK_INPUT(out.threads >= 0, "--threads must be >= 0 (0 = the physical cores), got " << out.threads);
    }
    if (kv.key() == "config") read_config_file(kv.value(), out);
  }
  std::map<std::string, bool> seen_on_command_line;
  for (const auto& kv : occurrences) {
    const FlagSpec* spec = find(kv.key());
    if (spec == nullptr) continue;  // help, verbose, config, threads
    check_type(*spec, kv.value(), "on the command line");
    const std::string idiom = value_idiom(spec->name, kv.value());
    ND_CHECK_INPUT(idiom.empty(), idiom);
    FlagValue& slot = out.values[spec->name];
    if (!seen_on_command_line[spec->name] || !spec->repeated) slot.texts.clear();
    slot.texts.push_back(kv.value());
    slot.origin = "command line";
    seen_on_command_line[spec->name] = true;
    out.given[spec->name] = true;
  }
  return out;
}

std::string FlagSet::help() const {
  std::ostringstream out;
  // One line per flag: name and value hint in a 30-column field, then the help.
  auto line = [&out](const std::string& left, const std::string& help) {
    std::string padded = "  " + left;
    if (padded.size() < 30) padded.resize(30, ' ');
    out << padded << " " << help << "\n";
  };
  out << "usage: nanodist " << command_ << " " << usage_ << "\n";
  std::vector<std::string> groups;
  for (const FlagSpec& s : specs_) {
    if (s.hidden) continue;
    bool known = false;
    for (const std::string& g : groups) known = known || g == s.group;
    if (!known) groups.push_back(s.group);
  }
  for (const std::string& group : groups) {
    out << "\n" << (group.empty() ? "options" : group) << ":\n";
    for (const FlagSpec& s : specs_) {
      if (s.group != group || s.hidden) continue;
      std::string help = s.help;
      if (!s.default_value.empty()) help += " (default: " + s.default_value + ")";
      if (s.repeated) help += " (may be repeated)";
      line("--" + s.name + " " + type_hint(s.type), help);
      for (const std::string& alias : s.aliases) line("--" + alias + " " + type_hint(s.type), "alias of --" + s.name);
    }
  }
  out << "\ngeneral:\n";
  if (config_file_) line("--config FILE", "'key = value' lines (keys are flag names); flags override it");
  line("--threads N", "CPU threads for the BLAS and OpenMP loops (default: the physical cores over the ranks on "
                      "this node, or OMP_NUM_THREADS where set; more threads than cores slow every step)");
  line("--verbose", "errors also name the failing check and file:line (or NANODIST_VERBOSE=1)");
  line("--help, -h", "this list");
  return out.str();
}

}  // namespace nd::cli
