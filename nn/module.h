// Module: ordered, named parameters and submodules. named_parameters() walks the tree in
// registration order, so names and order are stable (checkpoints and the flat buffers rely on it).
// Each parameter is registered with its ParamInfo (nn/param_info.h): how it splits, which block
// holds it, whether it is a (tied) embedding or takes weight decay.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.h"
#include "nn/param_info.h"

namespace nd::nn {

using NamedParameters = std::vector<std::pair<std::string, Variable>>;
using NamedParamInfos = std::vector<std::pair<std::string, ParamInfo>>;

class Module {
 public:
  virtual ~Module() = default;

  NamedParameters named_parameters() const;
  // The parameters' infos, in the order and with the names of named_parameters().
  NamedParamInfos named_param_infos() const;
  std::vector<Variable> parameters() const;
  int64_t num_parameters() const;
  // Every module of the tree under its dotted name (this one as ""), parents before children.
  std::vector<std::pair<std::string, const Module*>> named_modules() const;

  // Training mode turns dropout on; it applies to the whole subtree.
  void set_training(bool training);
  bool training() const { return training_; }

  void zero_grad();

 protected:
  Variable register_parameter(const std::string& name, Tensor init, const ParamInfo& info = {});
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    children_.emplace_back(name, module);
    return module;
  }
  // Every parameter of this subtree belongs to block `block` (ParamInfo::block).
  void assign_block(int block);

 private:
  void collect(const std::string& prefix, NamedParameters& out) const;
  void collect_infos(const std::string& prefix, NamedParamInfos& out) const;
  void collect_modules(const std::string& name, std::vector<std::pair<std::string, const Module*>>& out) const;

  NamedParameters params_;
  std::vector<ParamInfo> infos_;  // one per entry of params_
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

}  // namespace nd::nn
