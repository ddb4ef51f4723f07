// What a directory holds, for the two refusals that keep data and runs apart: `nanodist prepare`
// writes only into an empty directory or one holding its own output (unless --overwrite), and a
// training run never takes a directory of token files for its --out.
#pragma once
#include <string>
#include <vector>

namespace nd {

// The names of the entries of `dir` that prepare did not write, sorted: all but tokenizer.txt,
// prepare's work directory, token files of its names (train.bin, val_000001.bin, ...) in
// nanodist's format, and hidden names (.gitignore, a lock). Entries that are among `inputs` (the text being prepared, as given or as
// expanded) are left out too. Empty for a missing or empty directory.
std::vector<std::string> entries_not_from_prepare(const std::string& dir, const std::vector<std::string>& inputs);

// The name of a token file in `dir`: prepare's (train.bin, val.bin, their numbered shards) or
// llm.c's shards (*_train_*.bin, *_val_*.bin); "" when there is none.
std::string token_file_in(const std::string& dir);

}  // namespace nd
