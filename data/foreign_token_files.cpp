// Opening llm.c shards and nanoGPT raw token files as memory-mapped TokenShards.
#include "data/foreign_token_files.h"

#include <fstream>
#include <memory>

#include "data/mapped_file.h"
#include "tensor/error.h"

namespace nd {
namespace {

int32_t get_i32(const unsigned char* p) {
  return static_cast<int32_t>(static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                              (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24));
}

}  // namespace

int32_t peek_magic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  ND_CHECK_INPUT(in.is_open(), "cannot open token file " << path << " (missing or unreadable)");
  unsigned char b[4];
  in.read(reinterpret_cast<char*>(b), 4);
  return in.gcount() == 4 ? get_i32(b) : -1;
}

bool is_llmc_magic(int32_t magic) { return magic == kLlmcGpt2Magic || magic == kLlmcLlama3Magic; }

int64_t llmc_default_vocab_size(int32_t magic) { return magic == kLlmcLlama3Magic ? 128256 : 50257; }

std::string llmc_format_name(int32_t magic) { return magic == kLlmcLlama3Magic ? "llm.c Llama 3" : "llm.c GPT-2"; }

TokenShard open_llmc_shard(const std::string& path, int32_t* magic_out) {
  auto file = std::make_shared<const MappedFile>(path);
  const int64_t header_bytes = kLlmcHeaderInts * 4;
  ND_CHECK_INPUT(file->size() >= header_bytes, path << " is " << file->size() << " bytes, shorter than the "
                                              << header_bytes << "-byte header of an llm.c token shard");
  const unsigned char* h = file->bytes();
  int32_t magic = get_i32(h), version = get_i32(h + 4), count = get_i32(h + 8);
  ND_CHECK_INPUT(is_llmc_magic(magic), path << " is not an llm.c token shard (magic " << magic << ", expected "
                                      << kLlmcGpt2Magic << " for GPT-2 or " << kLlmcLlama3Magic << " for Llama 3)");
  int32_t expected_version = magic == kLlmcGpt2Magic ? kLlmcGpt2Version : kLlmcLlama3Version;
  ND_CHECK_INPUT(version == expected_version, path << ": " << llmc_format_name(magic) << " shard of unknown version "
                                             << version << " (magic " << magic << " goes with version "
                                             << expected_version << ")");
  ND_CHECK_INPUT(count >= 0, path << ": negative token count " << count << " in the header");
  const int width = magic == kLlmcGpt2Magic ? 2 : 4;
  int64_t expected_bytes = header_bytes + static_cast<int64_t>(count) * width;
  ND_CHECK_INPUT(file->size() == expected_bytes,
           path << " is " << file->size() << " bytes but its header promises " << count << " tokens of " << width
                << " bytes (" << expected_bytes << " bytes): truncated or corrupt");
  if (magic_out) *magic_out = magic;
  TokenShard shard;
  shard.name = path;
  shard.bytes = file->bytes() + header_bytes;
  shard.width = width;
  shard.count = count;
  shard.owner = std::move(file);
  return shard;
}

TokenShard open_nanogpt_raw(const std::string& path) {
  auto file = std::make_shared<const MappedFile>(path);
  ND_CHECK_INPUT(file->size() % 2 == 0, path << " is " << file->size()
                                       << " bytes, an odd length: not a nanoGPT file of uint16 tokens");
  TokenShard shard;
  shard.name = path;
  shard.bytes = file->bytes();
  shard.width = 2;
  shard.count = file->size() / 2;
  shard.owner = std::move(file);
  return shard;
}

}  // namespace nd
