// The middle of `prepare`: the text stream encoded piece by piece on several threads, the ids
// appended in order to part files of at most `shard_tokens` tokens, with a checkpoint of the
// state every `checkpoint_seconds`. Memory stays at threads + 2 pieces in flight (a piece's
// text and its ids: about 5 x piece_bytes for the char tokenizer), whatever the size of the text.
#pragma once
#include <cstdint>
#include <string>

#include "data/prepare_state.h"
#include "data/text_stream.h"
#include "data/tokenizer.h"

namespace nd {

struct EncodeJob {
  const TextStream* stream = nullptr;
  const Tokenizer* tokenizer = nullptr;
  std::string work_dir;            // part files and state.txt
  int64_t shard_tokens = 0;        // tokens per part file
  int64_t piece_bytes = 0;         // text per piece a thread encodes
  int threads = 1;
  double checkpoint_seconds = 10;  // 0: after every piece
  std::string error_hint;          // appended to an encoding error ("of TOKENIZER (...)")
  ProgressFn progress;             // fraction of the text encoded
};

std::string part_path(const std::string& work_dir, size_t index);  // WORK/part_000003.bin
std::string state_path(const std::string& work_dir);               // WORK/state.txt

// Encodes the text from state.offset to its end into the parts of `state` (reopening the last
// one at its recorded count), and leaves every part closed and the state saved with offset at
// the end. Text the tokenizer cannot encode is an nd::Error naming where; the whole work
// directory is removed first, since a rerun would fail alike.
void encode_into_parts(const EncodeJob& job, PrepareState& state);

}  // namespace nd
