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

NamedParamInfos Module::named_param_infos() const {
  NamedParamInfos out;
  collect_infos("", out);
  return out;
}

void Module::collect_infos(const std::string& prefix, NamedParamInfos& out) const {
  for (size_t i = 0; i < params_.size(); ++i) out.emplace_back(prefix + params_[i].first, infos_[i]);
  for (const auto& [name, child] : children_) child->collect_infos(prefix + name + ".", out);
}

std::vector<std::pair<std::string, const Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, const Module*>> out;
  collect_modules("", out);
  return out;
}

void Module::collect_modules(const std::string& name, std::vector<std::pair<std::string, const Module*>>& out) const {
  out.emplace_back(name, this);
  for (const auto& [child_name, child] : children_)
    child->collect_modules(name.empty() ? child_name : name + "." + child_name, out);
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

Variable Module::register_parameter(const std::string& name, Tensor init, const ParamInfo& info) {
  Variable v(std::move(init), true);
  params_.emplace_back(name, v);
  infos_.push_back(info);
  return v;
}

void Module::assign_block(int block) {
  for (ParamInfo& info : infos_) info.block = block;
  for (auto& [name, child] : children_) child->assign_block(block);
}

}  // namespace nd::nn
