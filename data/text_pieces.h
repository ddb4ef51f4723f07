// Cutting prepare's text stream into pieces that tokenize exactly as the whole stream does: each
// cut is a split point of pretokenize.h (or any byte for a bytewise tokenizer), so the ids of the
// pieces, concatenated, are the ids of the whole text.
#pragma once
#include <cstdint>
#include <string>

#include "data/text_stream.h"

namespace nd {

// No split point in this many bytes (a text without whitespace) is an error, not an unbounded
// read.
constexpr int64_t kMaxPieceBytes = int64_t{1} << 28;

// Reads the piece [begin, end) into `out` and returns end: the last split point at or before
// begin + target, or the stream's end when that comes first, or, when the first `target` bytes
// hold no split point, the first one after them. `bytewise`: every byte boundary is a split
// point (the char tokenizer). nd::Error when no split point comes within kMaxPieceBytes.
int64_t read_piece(const TextStream& stream, int64_t begin, int64_t target, bool bytewise, std::string& out);

// About `bytes` of the stream for learning a tokenizer: all of it when it is no longer, else
// `pieces` pieces spread evenly over it, each starting and ending at a split point, so their
// pre-split chunks are chunks of the whole text.
std::string read_sample(const TextStream& stream, int64_t bytes, int pieces = 64);

}  // namespace nd
