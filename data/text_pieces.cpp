// Finding split points near the wanted piece boundaries.
#include "data/text_pieces.h"

#include <algorithm>

#include "data/pretokenize.h"
#include "tensor/error.h"

namespace nd {

int64_t read_piece(const TextStream& stream, int64_t begin, int64_t target, bool bytewise, std::string& out) {
  ND_CHECK(target >= 1 && begin >= 0 && begin <= stream.size(), "read_piece: begin " << begin << ", target " << target);
  for (int64_t window = target;; window *= 2) {
    if (begin + window >= stream.size()) {
      stream.read(begin, window, out);
      return stream.size();
    }
    // One byte past the window: a split point at `window` needs the byte after it.
    stream.read(begin, window + 1, out);
    for (int64_t p = window; p > (window == target ? 0 : window / 2); --p) {
      if (bytewise || is_split_point(out, static_cast<size_t>(p))) {
        out.resize(static_cast<size_t>(p));
        return begin + p;
      }
    }
    ND_CHECK_INPUT(window < kMaxPieceBytes, stream.name() << " has no whitespace in the " << window
                                                          << " bytes from byte " << begin
                                                          << ": prepare cuts its text at whitespace to encode it in "
                                                             "pieces");
  }
}

std::string read_sample(const TextStream& stream, int64_t bytes, int pieces) {
  std::string sample, piece;
  if (stream.size() <= bytes) {
    stream.read(0, stream.size(), sample);
    return sample;
  }
  const int64_t each = std::max<int64_t>(1, bytes / pieces);
  int64_t covered = 0;  // the end of the last piece taken: pieces never overlap
  for (int i = 0; i < pieces; ++i) {
    int64_t start = std::max(covered, stream.size() / pieces * i);
    if (start > 0) {  // forward to the next split point
      stream.read(start - 1, each + 1, piece);
      size_t p = 1;
      while (p < piece.size() && !is_split_point(piece, p)) ++p;
      if (p >= piece.size()) continue;  // none near: this piece is left out
      start += static_cast<int64_t>(p) - 1;
    }
    if (start >= stream.size()) break;
    covered = read_piece(stream, start, each, false, piece);
    sample += piece;
  }
  return sample;
}

}  // namespace nd
