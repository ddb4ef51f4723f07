// The pre-split scanner: at each position take the first alternative of the GPT-2 pattern that
// matches, as the regex engine would.
#include "data/pretokenize.h"

#include <cstring>

namespace nd {
namespace {

enum class ByteClass { Letter, Digit, Space, Other };

ByteClass classify(unsigned char c) {
  if (c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return ByteClass::Letter;
  if (c >= '0' && c <= '9') return ByteClass::Digit;
  if (c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r') return ByteClass::Space;
  return ByteClass::Other;
}

ByteClass class_at(std::string_view text, size_t i) { return classify(static_cast<unsigned char>(text[i])); }

// Length of a contraction ('s 't 'm 'd 're 've 'll) starting at i, or 0.
size_t contraction_length(std::string_view text, size_t i) {
  if (text[i] != '\'' || i + 1 >= text.size()) return 0;
  char a = text[i + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 >= text.size()) return 0;
  char b = text[i + 2];
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// Length of the chunk that starts at i.
size_t chunk_length(std::string_view text, size_t i) {
  size_t n = text.size();
  if (size_t len = contraction_length(text, i)) return len;
  // " ?L+", " ?N+", " ?[^\s L N]+": an optional single space, then a run of one class.
  size_t start = i;
  if (text[i] == ' ' && i + 1 < n && class_at(text, i + 1) != ByteClass::Space) start = i + 1;
  ByteClass run_class = class_at(text, start);
  if (run_class != ByteClass::Space) {
    size_t end = start + 1;
    while (end < n && class_at(text, end) == run_class) ++end;
    return end - i;
  }
  // "\s+(?!\S)" then "\s+": a whitespace run followed by a non-space gives up its last byte
  // (which then leads the next chunk), unless the run is a single byte.
  size_t end = i + 1;
  while (end < n && class_at(text, end) == ByteClass::Space) ++end;
  if (end < n && end - i > 1) --end;
  return end - i;
}

}  // namespace

std::vector<std::string_view> split_into_chunks(std::string_view text) {
  std::vector<std::string_view> chunks;
  size_t i = 0;
  while (i < text.size()) {
    size_t len = chunk_length(text, i);
    chunks.push_back(text.substr(i, len));
    i += len;
  }
  return chunks;
}

bool is_split_point(std::string_view text, size_t p) {
  return p > 0 && p < text.size() && class_at(text, p - 1) != ByteClass::Space && class_at(text, p) == ByteClass::Space;
}

}  // namespace nd
