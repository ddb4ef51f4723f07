// Token files byte for byte as other projects write them, for tests:
//  - llm.c dev/data/data_common.py write_datafile: header = np.zeros(256, int32) with
//    header[0] = magic, header[1] = version, header[2] = len(toks); then header.tobytes() and
//    np.array(toks, dtype).tobytes() (uint16 for GPT-2, uint32 for Llama 3), little-endian.
//  - nanoGPT data/*/prepare.py: np.array(ids, dtype=np.uint16).tofile(path), nothing else.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tests/data/temp_dir.h"

namespace nd::testing {

constexpr int32_t kGpt2Magic = 20240520, kGpt2Version = 1;
constexpr int32_t kLlama3Magic = 20240801, kLlama3Version = 7;

inline void append_le(std::string& out, uint32_t value, int width) {
  for (int b = 0; b < width; ++b) out += static_cast<char>((value >> (8 * b)) & 0xff);
}

// The bytes llm.c writes; `count` is header[2] (normally tokens.size(): tests pass another to
// make a header that disagrees with the file).
inline std::string llmc_shard_bytes(int32_t magic, int32_t version, const std::vector<uint32_t>& tokens,
                                    int64_t count = -1) {
  std::string bytes;
  std::vector<int32_t> header(256, 0);
  header[0] = magic;
  header[1] = version;
  header[2] = static_cast<int32_t>(count < 0 ? static_cast<int64_t>(tokens.size()) : count);
  for (int32_t h : header) append_le(bytes, static_cast<uint32_t>(h), 4);
  int width = magic == kLlama3Magic ? 4 : 2;
  for (uint32_t t : tokens) append_le(bytes, t, width);
  return bytes;
}

inline void write_gpt2_shard(const std::string& path, const std::vector<uint32_t>& tokens) {
  write_bytes(path, llmc_shard_bytes(kGpt2Magic, kGpt2Version, tokens));
}
inline void write_llama3_shard(const std::string& path, const std::vector<uint32_t>& tokens) {
  write_bytes(path, llmc_shard_bytes(kLlama3Magic, kLlama3Version, tokens));
}

inline void write_nanogpt_bin(const std::string& path, const std::vector<uint32_t>& tokens) {
  std::string bytes;
  for (uint32_t t : tokens) append_le(bytes, t, 2);
  write_bytes(path, bytes);
}

// n tokens in [0, vocab), scrambled by `salt` so that shards and windows differ.
inline std::vector<uint32_t> some_tokens(int64_t n, uint32_t vocab, uint32_t salt = 0) {
  std::vector<uint32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = static_cast<uint32_t>((i * 7919 + 13 + salt * 104729) % vocab);
  return t;
}

}  // namespace nd::testing
