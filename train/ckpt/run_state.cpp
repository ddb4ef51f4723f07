// Checkpoint metadata of a run, and resuming from the newest intact checkpoint (run_state.h).
#include "train/ckpt/run_state.h"

#include <algorithm>
#include <optional>

#include "tensor/error.h"
#include "train/ckpt/checkpoint_index.h"
#include "train/ckpt/fp8_checkpoint.h"
#include "train/model_config.h"
#include "train/ckpt/model_snapshot.h"
#include "train/run/run_files.h"

namespace nd::train {

CheckpointData run_metadata(const RunParts& run, const RunCounters& counters) {
  CheckpointData data;
  data.config = config_attributes(run.model_config, run.config);
  CheckpointState& s = data.state;
  s.step = counters.step;
  s.optimizer_step = run.optimizer.step_count();
  s.dropout_seed = run.dropout_gen.seed();
  s.dropout_stream = run.dropout_gen.stream();
  s.dropout_offset = run.dropout_gen.offset();
  s.data_step = run.loader.step();
  s.world_size = run.world_size;
  s.best_val_loss = counters.best_val_loss;
  s.tokens = counters.tokens;
  if (run.loss_scaler != nullptr) {
    s.loss_scale = run.loss_scaler->state().scale;
    s.loss_scale_finite_steps = run.loss_scaler->state().finite_in_a_row;
    s.overflow_skips = run.loss_scaler->state().skipped_steps;
  }
  data.tokenizer_text = run.tokenizer_text;
  return data;
}

namespace {

// Loads `path` into the run; "" when done, else why it could not be read (corruption, a
// missing part): a reason to try an older checkpoint. Another model or tokenizer throws.
std::string try_load(const std::string& path, RunParts& run, RunCounters& counters, std::vector<std::string>& notes) {
  std::unique_ptr<CheckpointReader> reader;
  try {
    reader = std::make_unique<CheckpointReader>(path);
  } catch (const Error& e) {
    return e.message();
  }
  const CheckpointData& meta = reader->meta();
  check_same_model(model_config_from_attributes(meta.config, path), run.model_config, path);
  ND_CHECK_INPUT(meta.tokenizer_text == run.tokenizer_text,
                 "tokenizer mismatch: " << path << " was trained with another tokenizer than " << run.config.data.dir
                                        << "/tokenizer.txt");
  try {
    load_model_slices(*reader, run.model, run.tp, &run.optimizer);
    notes = load_fp8_state(*reader, run.fp8 != nullptr ? &run.fp8->scaling() : nullptr);
  } catch (const Error& e) {
    if (!e.is_input()) throw;
    return e.message();
  }
  const CheckpointState& s = meta.state;
  counters.step = s.step;
  counters.best_val_loss = s.best_val_loss;
  counters.tokens = s.tokens;
  run.optimizer.set_step_count(s.optimizer_step);
  run.dropout_gen = Generator(s.dropout_seed, s.dropout_stream);
  run.dropout_gen.set_offset(s.dropout_offset);
  run.loader.set_step(s.data_step);
  // A checkpoint written without loss scaling holds scale 1: the scaler then starts afresh.
  if (run.loss_scaler != nullptr && (s.loss_scale != 1.0 || s.overflow_skips > 0 || s.loss_scale_finite_steps > 0))
    run.loss_scaler->set_state(LossScalerState{s.loss_scale, s.loss_scale_finite_steps, s.overflow_skips});
  return "";
}

}  // namespace

std::string resume_run(RunParts& run, RunCounters& counters, dist::Comm& world, std::vector<std::string>& skipped,
                       std::vector<std::string>* notes) {
  auto all = list_checkpoints(run.config.checkpoint.out_dir);
  std::reverse(all.begin(), all.end());
  // A candidate given up on may have set part of the FP8 state: each starts from the fresh one.
  std::optional<nn::DelayedScaling> fresh_fp8;
  if (run.fp8 != nullptr) fresh_fp8 = run.fp8->scaling();
  // Every rank sees the same directory, so the same list; each agrees on each candidate.
  for (const auto& [step, path] : all) {
    const RunCounters before = counters;
    if (run.fp8 != nullptr) run.fp8->scaling() = *fresh_fp8;
    std::vector<std::string> fp8_notes;
    std::string why = try_load(path, run, counters, fp8_notes);
    int64_t bad = why.empty() ? 0 : 1;
    if (world.size() > 1) world.host_allreduce(&bad, 1, dist::HostReduce::Sum);
    if (bad == 0) {
      if (run.fp8 != nullptr) run.fp8->write_scales();  // the first step quantises with the saved scales
      if (notes != nullptr) notes->insert(notes->end(), fp8_notes.begin(), fp8_notes.end());
      return path;
    }
    counters = before;
    skipped.push_back("skipping checkpoint " + path + ": " +
                      (why.empty() ? std::string("another rank could not read its slices") : why));
  }
  // The model may hold part of a damaged checkpoint now: starting from scratch would be wrong.
  ND_CHECK_INPUT(all.empty(), "--resume: none of the " << all.size() << " checkpoint(s) in "
                                                       << run.config.checkpoint.out_dir
                                                       << " can be read (newest: " << skipped.front() << ")");
  return "";
}

}  // namespace nd::train
