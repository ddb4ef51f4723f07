// The pipeline's split of the blocks (pipeline_stages.h).
#include "train/pipeline_stages.h"

#include <sstream>

#include "tensor/error.h"
#include "train/config.h"
#include "train/pipeline_plan.h"

namespace nd::train {

std::vector<int> pipeline_stage_blocks(int n_layer, int stages, const std::string& layers) {
  ND_CHECK_INPUT(stages >= 1, "pipeline stages must be >= 1, got " << stages);
  std::vector<int> counts;
  if (layers.empty()) {
    ND_CHECK_INPUT(n_layer % stages == 0,
                   "--pp " << stages << " does not divide --n-layer " << n_layer << " into equal stages (" << stages
                           << " stages of " << n_layer / stages << " or " << n_layer / stages + 1
                           << " blocks: list them with --pp-layers)");
    counts.assign(stages, n_layer / stages);
  } else {
    std::istringstream in(layers);
    std::string item;
    while (std::getline(in, item, ',')) {
      int n = 0;
      size_t used = 0;
      try {
        n = std::stoi(item, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      ND_CHECK_INPUT(used == item.size() && used > 0 && n >= 1,
                     "--pp-layers '" << layers << "': '" << item << "' is not a block count >= 1");
      counts.push_back(n);
    }
    int sum = 0;
    for (int n : counts) sum += n;
    ND_CHECK_INPUT(static_cast<int>(counts.size()) == stages && sum == n_layer,
                   "--pp-layers '" << layers << "' lists " << counts.size() << " stages of " << sum
                                   << " blocks in all; the pipeline has " << stages << " stages of --n-layer "
                                   << n_layer << " blocks");
  }
  std::vector<int> first{0};
  for (int n : counts) first.push_back(first.back() + n);
  return first;
}

void validate_pipeline_config(const TrainConfig& c) {
  const PipelineKind kind = c.parallel.pp_schedule;
  // Zero-bubble's weight passes write the gradients in place after the data-parallel hooks: the
  // gradients must be the backward's own buffers (not f32 copies of bf16 ones).
  const std::optional<DType>& grad = c.precision.grad_dtype;
  ND_CHECK_INPUT(kind != PipelineKind::ZeroBubble || !grad || *grad == c.precision.dtype,
                 "--pp-schedule zb needs --grad-dtype equal to --dtype (" << dtype_flag_name(c.precision.dtype)
                                                                          << "), got " << dtype_name(*grad));
  pipeline_stage_blocks(c.model.n_layer, c.parallel.pp * c.parallel.pp_virtual, c.parallel.pp_layers);
  pipeline_actions(kind, PipelineShape{c.parallel.pp, c.data.grad_accum, c.parallel.pp_virtual});
}

}  // namespace nd::train
