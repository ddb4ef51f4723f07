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

// True when text[0, p) and text[p, end) split into exactly the chunks the whole text has on either
// side of p (0 < p < text.size()): text[p - 1] is not whitespace and text[p] is. No chunk pattern
// joins a non-space to the space after it, and the scan from p on starts afresh either way. Every
// nanodist tokenizer (bytes, BPE, GPT-2, ids) then encodes the halves into the whole's ids, so a
// long text can be encoded in pieces cut at such points.
bool is_split_point(std::string_view text, size_t p);

}  // namespace nd
