// How the blocks of a GPT are split into pipeline stages: contiguous ranges, equal unless the
// user lists them (--pp-layers), checked against the model with one-line errors naming the numbers.
#pragma once
#include <string>
#include <vector>

namespace nd::train {

// The first block of each of `stages` stages and n_layer at the end (stages + 1 entries). Without
// `layers` ("" = even): stages must divide n_layer. `layers`: a comma-separated count per stage
// ("3,3,2"), each >= 1, summing to n_layer. nd::Error (an input error) otherwise.
std::vector<int> pipeline_stage_blocks(int n_layer, int stages, const std::string& layers);

struct TrainConfig;
// The pipeline flags of a run at --pp > 1 (schedule, stages, chunks, micro-batches): one-line
// input errors naming the numbers.
void validate_pipeline_config(const TrainConfig& config);

}  // namespace nd::train
