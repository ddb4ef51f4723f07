// Module: ordered, named parameters and submodules. named_parameters() walks the tree in
// registration order, so names and order are stable (checkpoints and DDP buckets rely on it).
// Each parameter also says how tensor parallelism splits it (replicated unless registered with a
// ShardSpec), so checkpoints can gather full tensors and slice them again.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.h"
#include "dist/parallel/tensor_shard.h"

namespace nd::nn {

using NamedParameters = std::vector<std::pair<std::string, Variable>>;
using NamedShardSpecs = std::vector<std::pair<std::string, dist::ShardSpec>>;

class Module {
 public:
  virtual ~Module() = default;

  NamedParameters named_parameters() const;
  // The parameters' shard specs, in the order and with the names of named_parameters().
  NamedShardSpecs named_shard_specs() const;
  std::vector<Variable> parameters() const;
  int64_t num_parameters() const;

  // Training mode turns dropout on; it applies to the whole subtree.
  void set_training(bool training);
  bool training() const { return training_; }

  void zero_grad();

 protected:
  Variable register_parameter(const std::string& name, Tensor init, dist::ShardSpec spec = {});
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    children_.emplace_back(name, module);
    return module;
  }

 private:
  void collect(const std::string& prefix, NamedParameters& out) const;
  void collect_specs(const std::string& prefix, NamedShardSpecs& out) const;

  NamedParameters params_;
  std::vector<dist::ShardSpec> specs_;  // one per entry of params_
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

}  // namespace nd::nn
