// Reading HellaSwag's jsonl and scoring endings by their tokens' loss (multiple_choice.h).
#include "train/multiple_choice.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "autograd/variable.h"
#include "data/json_value.h"
#include "tensor/error.h"

namespace nd::train {

std::vector<ChoiceExample> read_hellaswag(const std::string& path) {
  std::ifstream in(path);
  ND_CHECK_INPUT(in.good(), "cannot read " << path << " (give the HellaSwag jsonl, e.g. hellaswag_val.jsonl)");
  std::vector<ChoiceExample> out;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(number);
    const JsonValue doc = parse_json(line, where);
    const JsonValue* ctx = doc.find("ctx");
    const JsonValue* endings = doc.find("endings");
    const JsonValue* label = doc.find("label");
    ND_CHECK_INPUT(ctx && endings && label, where << ": a HellaSwag example needs \"ctx\", \"endings\" and \"label\"");
    ChoiceExample e;
    e.context = ctx->as_string(where + " ctx");
    ND_CHECK_INPUT(endings->kind == JsonValue::Kind::Array && endings->items.size() >= 2,
                   where << ": \"endings\" must be an array of at least two strings");
    for (const JsonValue& ending : endings->items) e.endings.push_back(ending.as_string(where + " ending"));
    // The published files give the label as a number; some copies as a digit string.
    const int64_t index = label->kind == JsonValue::Kind::String ? std::atoll(label->text.c_str())
                                                                 : label->as_int(where + " label");
    ND_CHECK_INPUT(index >= 0 && index < static_cast<int64_t>(e.endings.size()),
                   where << ": label " << index << " is not the index of one of its " << e.endings.size()
                         << " endings");
    e.label = static_cast<int>(index);
    out.push_back(std::move(e));
  }
  ND_CHECK_INPUT(!out.empty(), path << " holds no examples");
  return out;
}

ChoiceLosses score_endings(const nn::GPT& model, const std::vector<int32_t>& context,
                           const std::vector<std::vector<int32_t>>& endings) {
  const int64_t block = model.config().block_size, vocab = model.config().vocab_size;
  const int64_t rows = static_cast<int64_t>(endings.size());
  // Each row: the context's tail and the ending, at most block + 1 tokens (inputs and targets).
  std::vector<std::vector<int32_t>> row(endings.size());
  std::vector<int64_t> first_target(endings.size());  // index in the row of the ending's first token
  int64_t T = 1;
  for (size_t r = 0; r < endings.size(); ++r) {
    const std::vector<int32_t>& ending = endings[r];
    ND_CHECK_INPUT(!ending.empty(), "an ending encodes to no tokens");
    const int64_t keep_ending = std::min<int64_t>(static_cast<int64_t>(ending.size()), block);
    const int64_t keep_context = std::min<int64_t>(static_cast<int64_t>(context.size()), block + 1 - keep_ending);
    ND_CHECK_INPUT(keep_context >= 1, "the context encodes to no tokens");
    row[r].assign(context.end() - keep_context, context.end());
    row[r].insert(row[r].end(), ending.begin(), ending.begin() + keep_ending);
    first_target[r] = keep_context;
    T = std::max<int64_t>(T, static_cast<int64_t>(row[r].size()) - 1);
  }
  std::vector<int32_t> inputs(static_cast<size_t>(rows * T), 0);  // padding after a row is never read
  for (int64_t r = 0; r < rows; ++r)
    std::copy(row[r].begin(), row[r].end() - 1, inputs.begin() + r * T);
  NoGradGuard no_grad;
  Generator unused(0, 0);  // eval mode: dropout draws nothing
  const Tensor idx = Tensor::from_vector(inputs, {rows, T}).to(model.device());
  const Tensor logits = model.forward(idx, nullptr, unused).logits.data().to(Device::cpu()).to(DType::F32);
  const int64_t padded = logits.size(2);
  const float* all = logits.data<float>();
  ChoiceLosses out;
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0.0;
    const int64_t n = static_cast<int64_t>(row[r].size());
    for (int64_t p = first_target[r]; p < n; ++p) {
      // -log softmax over the real vocabulary (the padding columns are never predicted) at the
      // position before the target.
      const float* z = all + (r * T + p - 1) * padded;
      const double top = *std::max_element(z, z + vocab);
      double total = 0.0;
      for (int64_t v = 0; v < vocab; ++v) total += std::exp(static_cast<double>(z[v]) - top);
      sum += top + std::log(total) - static_cast<double>(z[row[r][static_cast<size_t>(p)]]);
    }
    out.sum.push_back(sum);
    out.mean.push_back(sum / static_cast<double>(n - first_target[r]));
  }
  return out;
}

ChoiceAccuracy score_examples(const nn::GPT& model, const std::vector<ChoiceExample>& examples,
                              const Tokenizer& tokenizer, dist::Comm* comm) {
  const int rank = comm ? comm->rank() : 0, world = comm ? comm->size() : 1;
  int64_t counts[3] = {0, 0, 0};  // examples, correct by total loss, correct by mean loss
  for (size_t i = static_cast<size_t>(rank); i < examples.size(); i += static_cast<size_t>(world)) {
    const ChoiceExample& e = examples[i];
    std::vector<std::vector<int32_t>> endings;
    for (const std::string& ending : e.endings) endings.push_back(tokenizer.encode(" " + ending));
    const ChoiceLosses losses = score_endings(model, tokenizer.encode(e.context), endings);
    const auto best = [](const std::vector<double>& v) {
      return static_cast<int>(std::min_element(v.begin(), v.end()) - v.begin());
    };
    counts[0] += 1;
    counts[1] += best(losses.sum) == e.label;
    counts[2] += best(losses.mean) == e.label;
  }
  if (comm != nullptr && comm->size() > 1) comm->host_allreduce(counts, 3, dist::HostReduce::Sum);
  return ChoiceAccuracy{counts[0], counts[1], counts[2]};
}

}  // namespace nd::train
