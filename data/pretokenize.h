// GPT-2-style pre-split of text into chunks before byte-level BPE, so merges never cross a
// word boundary. Hand-written equivalent of GPT-2's pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?L+| ?N+| ?[^\s L N]+|\s+(?!\S)|\s+
// where L = ASCII letters and every byte >= 0x80 (so UTF-8 words stay whole), N = ASCII digits,
// \s = ASCII whitespace (space, \t, \n, \v, \f, \r).
#pragma once
#include <string_view>
#include <vector>

namespace nd {

// The chunks, in order; their concatenation is exactly `text` (every byte, NUL included).
std::vector<std::string_view> split_into_chunks(std::string_view text);

}  // namespace nd
