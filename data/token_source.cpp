// TokenSource: shard bookkeeping, the one-pass vocabulary check, and copying windows out.
// Tokens are decoded byte by byte, so the stream is little-endian whatever the host.
#include "data/token_source.h"

#include <algorithm>

#include "data/mapped_file.h"
#include "tensor/error.h"

namespace nd {
namespace {

inline uint32_t load_u16(const unsigned char* p) { return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8); }
inline uint32_t load_u32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}
inline uint32_t load(const TokenShard& s, int64_t i) {
  const unsigned char* p = s.bytes + i * s.width;
  return s.width == 2 ? load_u16(p) : load_u32(p);
}

// Index of the first token >= vocab in the shard, or -1. The max over a chunk is a loop the
// compiler vectorizes; only a failing chunk is searched token by token.
template <uint32_t (*Load)(const unsigned char*)>
int64_t first_out_of_vocab(const unsigned char* bytes, int width, int64_t count, uint64_t vocab) {
  constexpr int64_t kChunk = 1 << 16;
  for (int64_t begin = 0; begin < count; begin += kChunk) {
    int64_t end = std::min(count, begin + kChunk);
    uint32_t max = 0;
    for (int64_t i = begin; i < end; ++i) max = std::max(max, Load(bytes + i * width));
    if (max < vocab) continue;
    for (int64_t i = begin; i < end; ++i)
      if (Load(bytes + i * width) >= vocab) return i;
  }
  return -1;
}

}  // namespace

TokenSource::TokenSource(std::vector<TokenShard> shards, int64_t vocab_size, Checked)
    : shards_(std::move(shards)), vocab_size_(vocab_size) {
  ND_CHECK(!shards_.empty(), "a token stream needs at least one file");
  ND_CHECK_INPUT(vocab_size_ > 0, shards_[0].name << ": vocab size " << vocab_size_ << " must be positive");
  starts_.push_back(0);
  for (const TokenShard& s : shards_) {
    ND_CHECK_INPUT(s.width == 2 || s.width == 4, s.name << ": token width " << s.width << " bytes, expected 2 or 4");
    ND_CHECK_INPUT(s.count >= 0 && (s.count == 0 || s.bytes != nullptr), s.name << ": no tokens to read");
    starts_.push_back(starts_.back() + s.count);
  }
}

TokenSource::TokenSource(std::vector<TokenShard> shards, int64_t vocab_size)
    : TokenSource(std::move(shards), vocab_size, Checked{}) {
  const uint64_t vocab = static_cast<uint64_t>(vocab_size_);
  for (const TokenShard& s : shards_) {
    if (s.width == 2 && vocab >= 65536) continue;  // every u16 fits
    int64_t bad = s.width == 2 ? first_out_of_vocab<load_u16>(s.bytes, 2, s.count, vocab)
                               : first_out_of_vocab<load_u32>(s.bytes, 4, s.count, vocab);
    ND_CHECK_INPUT(bad < 0, s.name << ": token " << bad << " is " << load(s, bad) << ", outside the vocabulary of size "
                             << vocab_size_ << " (--vocab-size sets it for files that do not record it)");
  }
}

std::shared_ptr<const TokenSource> TokenSource::of(std::shared_ptr<const TokenFile> file) {
  ND_CHECK(file != nullptr, "a token stream needs a token file");
  TokenShard shard;
  shard.name = file->path();
  shard.bytes = reinterpret_cast<const unsigned char*>(file->data());
  shard.width = 4;  // TokenFile holds its tokens as host i32, which are non-negative here
  shard.count = file->size();
  int64_t vocab = file->vocab_size();
  shard.owner = std::move(file);
  static_assert(sizeof(int32_t) == 4, "i32 tokens");
  // Host i32 in memory: on a big-endian host the byte-wise little-endian decode would be wrong.
  const uint32_t probe = 1;
  ND_CHECK(*reinterpret_cast<const unsigned char*>(&probe) == 1, "in-memory token streams need a little-endian host");
  return std::shared_ptr<const TokenSource>(new TokenSource({std::move(shard)}, vocab, Checked{}));
}

TokenShard map_token_file(const std::string& path, int64_t* vocab_size) {
  // The header is read and checked as TokenFile::open does (the same errors), then the file mapped.
  const TokenFileHeader h = read_token_file_header(path);
  auto file = std::make_shared<const MappedFile>(path);
  const int64_t header_bytes = kTokenFileHeaderInts * 4;
  ND_CHECK_INPUT(file->size() == header_bytes + h.count * h.width, path << " changed while it was opened");
  if (vocab_size) *vocab_size = h.vocab_size;
  TokenShard shard;
  shard.name = path;
  shard.bytes = file->bytes() + header_bytes;
  shard.width = h.width;
  shard.count = h.count;
  shard.owner = std::move(file);
  return shard;
}

std::string TokenSource::name() const {
  if (shards_.size() == 1) return shards_[0].name;
  return shards_[0].name + " (+" + std::to_string(shards_.size() - 1) + " more shards)";
}

size_t TokenSource::shard_of(int64_t i) const {
  ND_CHECK(i >= 0 && i < size(), "token " << i << " is outside a stream of " << size() << " tokens");
  return static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), i) - starts_.begin() - 1);
}

int32_t TokenSource::operator[](int64_t i) const {
  size_t s = shard_of(i);
  return static_cast<int32_t>(load(shards_[s], i - starts_[s]));
}

void TokenSource::copy(int64_t start, int64_t count, int32_t* out) const {
  if (count <= 0) return;
  ND_CHECK(start >= 0 && start + count <= size(),
           "window [" << start << ", " << start + count << ") is outside a stream of " << size() << " tokens");
  size_t s = shard_of(start);
  int64_t i = start - starts_[s];
  for (int64_t k = 0; k < count; ++k, ++i) {
    while (i >= shards_[s].count) {  // next non-empty shard
      i -= shards_[s].count;
      ++s;
    }
    out[k] = static_cast<int32_t>(load(shards_[s], i));
  }
}

}  // namespace nd
