// Token files written by other projects, read as they are:
//  - llm.c shards (dev/data/data_common.py): a header of 256 little-endian int32 with
//    header[0] = magic, header[1] = version, header[2] = token count, then the tokens:
//    magic 20240520 version 1 = GPT-2 (u16 tokens), magic 20240801 version 7 = Llama 3 (u32).
//    No vocabulary size is recorded.
//  - nanoGPT's train.bin / val.bin: raw u16 tokens, no header at all.
#pragma once
#include <cstdint>
#include <string>

#include "data/token_source.h"

namespace nd {

constexpr int32_t kLlmcGpt2Magic = 20240520;
constexpr int32_t kLlmcGpt2Version = 1;
constexpr int32_t kLlmcLlama3Magic = 20240801;
constexpr int32_t kLlmcLlama3Version = 7;
constexpr int kLlmcHeaderInts = 256;

// The first little-endian int32 of the file, or -1 when it is shorter than 4 bytes (nd::Error
// when it cannot be read). Tells our .bin, llm.c shards and headerless files apart.
int32_t peek_magic(const std::string& path);
bool is_llmc_magic(int32_t magic);

// The vocabulary an llm.c shard's tokenizer has: 50257 (GPT-2) or 128256 (Llama 3).
int64_t llmc_default_vocab_size(int32_t magic);
std::string llmc_format_name(int32_t magic);  // "llm.c GPT-2" or "llm.c Llama 3"

// Maps and checks an llm.c shard: nd::Error naming the file on a short header, an unknown magic,
// a version that does not belong to the magic, a negative count, or a length other than
// 1024 + count * width bytes. `magic` receives the shard's magic. Tokens are checked against the
// vocabulary by TokenSource.
TokenShard open_llmc_shard(const std::string& path, int32_t* magic = nullptr);

// Maps a nanoGPT raw u16 file: nd::Error on an odd length.
TokenShard open_nanogpt_raw(const std::string& path);

}  // namespace nd
