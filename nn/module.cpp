#include "nn/module.h"

namespace nd::nn {

NamedParameters Module::named_parameters() const {
  NamedParameters out;
  collect("", out);
  return out;
}

void Module::collect(const std::string& prefix, NamedParameters& out) const {
  for (const auto& [name, param] : params_) out.emplace_back(prefix + name, param);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

NamedShardSpecs Module::named_shard_specs() const {
  NamedShardSpecs out;
  collect_specs("", out);
  return out;
}

void Module::collect_specs(const std::string& prefix, NamedShardSpecs& out) const {
  for (size_t i = 0; i < params_.size(); ++i) out.emplace_back(prefix + params_[i].first, specs_[i]);
  for (const auto& [name, child] : children_) child->collect_specs(prefix + name + ".", out);
}

std::vector<Variable> Module::parameters() const {
  std::vector<Variable> out;
  for (auto& [name, p] : named_parameters()) out.push_back(p);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (auto& [name, p] : named_parameters()) n += p.data().numel();
  return n;
}

void Module::set_training(bool training) {
  training_ = training;
  for (auto& [name, child] : children_) child->set_training(training);
}

void Module::zero_grad() {
  for (auto& [name, p] : named_parameters()) p.zero_grad();
}

Variable Module::register_parameter(const std::string& name, Tensor init, dist::ShardSpec spec) {
  Variable v(std::move(init), true);
  params_.emplace_back(name, v);
  specs_.push_back(spec);
  return v;
}

}  // namespace nd::nn
