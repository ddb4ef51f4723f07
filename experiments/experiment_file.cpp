// Experiment files: sections, settings and their checks, one pass over the lines.
#include "experiments/experiment_file.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "tensor/error.h"

namespace nd::experiments {
namespace {

using cli::FlagSet;
using cli::FlagSpec;
using train::FlagType;

std::string trim(const std::string& s) {
  size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  size_t end = s.find_last_not_of(" \t\r\n");
  return s.substr(begin, end - begin + 1);
}

// Config files may use nanoGPT's underscores; flags use dashes.
std::string dashed(std::string key) {
  for (char& c : key)
    if (c == '_') c = '-';
  return key;
}

const FlagSpec* find_spec(const FlagSet& set, const std::string& key) {
  static const std::set<std::string> reserved = {"data", "out", "resume", "config", "experiment", "help"};
  if (reserved.count(key)) return nullptr;
  return set.find(key);  // a flag's name or one of its aliases
}

// Variant names become directory names.
bool valid_name(const std::string& name) {
  if (name.empty() || name[0] == '.') return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

void check_value(const FlagSpec& spec, const std::string& value, bool in_variant, const std::string& where) {
  const std::string what = "'" + spec.name + "' at " + where;
  double factor = 0;
  if (in_variant && parse_multiplier(value, &factor)) {
    ND_CHECK_INPUT(spec.type == FlagType::Int || spec.type == FlagType::Float,
             "multiplier '" << value << "' for " << what << ": only numeric flags can be scaled");
    return;
  }
  switch (spec.type) {
    case FlagType::Int: train::parse_int_value(value, what); break;
    case FlagType::Float: train::parse_double_value(value, what); break;
    case FlagType::Bool: train::parse_bool_value(value, what); break;
    case FlagType::String: break;
  }
}

}  // namespace

bool parse_multiplier(const std::string& value, double* factor) {
  if (value.size() < 2 || value[0] != 'x') return false;
  char* end = nullptr;
  double f = std::strtod(value.c_str() + 1, &end);
  if (end != value.c_str() + value.size()) return false;
  *factor = f;
  return true;
}

ExperimentSpec parse_experiment(const std::string& text, const std::string& source, const FlagSet& base_keys,
                                const FlagSet& variant_keys) {
  ExperimentSpec spec;
  spec.source = source;
  std::istringstream in(text);
  std::string line;
  int line_number = 0;
  std::set<std::string> keys_here;  // keys of the current section (or the base)
  auto close_section = [&]() {
    if (spec.variants.empty()) return;
    const VariantSpec& v = spec.variants.back();
    ND_CHECK_INPUT(!v.settings.empty(), "variant [" << v.name << "] at " << v.where << " sets nothing (the control is "
                                              << "the base itself)");
  };
  while (std::getline(in, line)) {
    ++line_number;
    const std::string where = source + ":" + std::to_string(line_number);
    const std::string body = trim(line.substr(0, line.find('#')));
    if (body.empty()) continue;
    if (body.front() == '[') {
      ND_CHECK_INPUT(body.back() == ']', "expected '[name]' at " << where << ", got '" << body << "'");
      close_section();
      const std::string name = trim(body.substr(1, body.size() - 2));
      ND_CHECK_INPUT(valid_name(name), "bad variant name '" << name << "' at " << where
                                                      << " (letters, digits, '-', '_' and '.'; it names a directory)");
      ND_CHECK_INPUT(name != "control", "variant [control] at " << where << ": the control is the base; name variants "
                                                          << "otherwise");
      for (const VariantSpec& v : spec.variants)
        ND_CHECK_INPUT(v.name != name, "duplicate variant [" << name << "] at " << where << " (first at " << v.where << ")");
      spec.variants.push_back(VariantSpec{name, where, {}});
      keys_here.clear();
      continue;
    }
    const size_t eq = body.find('=');
    ND_CHECK_INPUT(eq != std::string::npos, "expected 'key = value' or '[name]' at " << where << ", got '" << body << "'");
    Setting s{dashed(trim(body.substr(0, eq))), trim(body.substr(eq + 1)), where};
    const bool in_variant = !spec.variants.empty();
    const FlagSpec* flag = find_spec(in_variant ? variant_keys : base_keys, s.key);
    ND_CHECK_INPUT(flag != nullptr, "unknown key '" << s.key << "' at " << where << " (keys are flag names"
                                              << (in_variant ? "; a variant sets train flags)" : ")"));
    s.key = flag->name;  // an alias sets its flag
    ND_CHECK_INPUT(keys_here.insert(s.key).second, "duplicate key '" << s.key << "' at " << where);
    check_value(*flag, s.value, in_variant, where);
    (in_variant ? spec.variants.back().settings : spec.base).push_back(s);
  }
  close_section();
  ND_CHECK_INPUT(!spec.base.empty() || !spec.variants.empty(), "experiment " << source << " is empty (no settings, no "
                                                                       << "[variants])");
  return spec;
}

ExperimentSpec read_experiment_file(const std::string& path, const FlagSet& base_keys, const FlagSet& variant_keys) {
  std::ifstream in(path);
  ND_CHECK_INPUT(in.good(), "cannot open experiment file " << path);
  std::ostringstream text;
  text << in.rdbuf();
  return parse_experiment(text.str(), path, base_keys, variant_keys);
}

}  // namespace nd::experiments
