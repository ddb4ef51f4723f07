// nanoGPT's meta.pkl (written by its shakespeare_char prepare.py beside train.bin and val.bin): a
// pickled dict {'vocab_size': int, 'itos': {int: str}, 'stoi': {str: int}}. Read by a small pickle
// reader that knows only the opcodes such a dict is written with (protocols 2 to 5) and executes
// nothing: any other opcode (a class, a function call) is refused.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace nd {

struct NanoGptMeta {
  int64_t vocab_size = 0;
  std::vector<std::string> itos;  // itos[id] = the character (UTF-8); empty when the file has none
};

// nd::Error (one line naming the file) on a malformed or unsupported pickle, a missing
// vocab_size, or an itos whose ids are not 0 .. vocab_size - 1.
NanoGptMeta read_nanogpt_meta(const std::string& path);

// The nanodist char tokenizer equal to `meta`'s itos (tokenizer.txt's text), or "" when the
// characters are not single bytes in increasing order (nanodist's char tokenizer is bytewise).
std::string char_tokenizer_text_from_meta(const NanoGptMeta& meta);

}  // namespace nd
