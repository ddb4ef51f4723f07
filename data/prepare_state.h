// The record an unfinished `prepare` keeps in DIR/prepare.unfinished/state.txt: the job (inputs
// with their sizes and times, tokenizer, options), the learned tokenizer's hash, and how far the
// job got (bytes of text encoded, tokens in each part file). Rewritten atomically at each
// checkpoint; a rerun of the same command reads it and goes on from there.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace nd {

struct PrepareState {
  std::string job;             // "key value" lines; a resumed job must describe itself identically
  std::string tokenizer_hash;  // fnv1a_hex of the tokenizer file beside it
  int64_t offset = 0;          // the text's first offset whose tokens are not in the parts yet
  std::vector<int64_t> parts;  // tokens in part_000000.bin, ...; all closed but the last
};

void write_prepare_state(const std::string& path, const PrepareState& state);
// nd::Error naming the file when it is not a state file this build wrote.
PrepareState read_prepare_state(const std::string& path);

// The first line where two job descriptions differ, "(none)" when equal.
std::string first_difference(const std::string& a, const std::string& b);

}  // namespace nd
