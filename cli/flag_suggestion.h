// The nearest flag to one nanodist does not know, for "did you mean" in the error: the names
// nanoGPT and llm.c users type (learning_rate, gradient_accumulation_steps, num_iterations, ...)
// map to ours, anything else to the known flag at the smallest edit distance, if it is close.
#pragma once
#include <string>
#include <vector>

namespace nd::cli {

// `name` dash-separated, without leading dashes; "" when nothing is near enough to suggest.
std::string nearest_flag(const std::string& name, const std::vector<std::string>& known);

}  // namespace nd::cli
