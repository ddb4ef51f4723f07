// Checkpoint writing and resuming for a training run (run_state.h).
#include "train/run_state.h"

#include "train/checkpoint_model.h"
#include "train/run_files.h"

namespace nd::train {

std::string save_run(const RunParts& run, const RunCounters& counters, bool write) {
  if (!write && !run.model.tensor_parallel().active()) return "";
  CheckpointData data;
  store_model(run.model, &run.optimizer, data);  // collective over the tp group
  if (!write) return "";
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
  data.tokenizer_text = run.tokenizer_text;
  std::string path = checkpoint_path(run.config.out_dir, counters.step);
  try {
    write_checkpoint(path, data);
  } catch (const Error& e) {
    std::string kept = newest_checkpoint(run.config.out_dir);
    ND_FAIL(e.message() << (kept.empty() ? std::string("; no earlier checkpoint exists")
                                         : "; the newest complete checkpoint stays " + kept));
  }
  prune_checkpoints(run.config.out_dir, run.config.keep);
  return path;
}

std::string resume_run(RunParts& run, RunCounters& counters) {
  std::string path = newest_checkpoint(run.config.out_dir);
  if (path.empty()) return path;
  CheckpointData data = read_checkpoint(path);
  check_same_model(model_config_from_attributes(data.config, path), run.model_config, path);
  ND_CHECK(data.tokenizer_text == run.tokenizer_text,
           "tokenizer mismatch: " << path << " was trained with another tokenizer than "
                                  << run.config.data_dir << "/tokenizer.txt");
  load_model(data, path, run.model, &run.optimizer);
  const CheckpointState& s = data.state;
  counters.step = s.step;
  counters.best_val_loss = s.best_val_loss;
  counters.tokens = s.tokens;
  run.optimizer.set_step_count(s.optimizer_step);
  run.dropout_gen = Generator(s.dropout_seed, s.dropout_stream);
  run.dropout_gen.set_offset(s.dropout_offset);
  run.loader.set_step(s.data_step);
  return path;
}

}  // namespace nd::train
