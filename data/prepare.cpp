// prepare(): validate everything cheap first, then read, tokenize, split and write.
#include "data/prepare.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <memory>

#include "data/bpe_tokenizer.h"
#include "data/char_tokenizer.h"
#include "data/corpus.h"
#include "data/id_tokenizer.h"
#include "data/token_file.h"
#include "tensor/error.h"
#include "tensor/philox.h"

namespace nd {
namespace {

void validate(const PrepareOptions& o) {
  ND_CHECK_INPUT(!o.out_dir.empty(), "prepare needs an output directory (--out)");
  ND_CHECK_INPUT(o.val_fraction > 0.0 && o.val_fraction < 1.0,
                 "val fraction " << o.val_fraction << " must lie strictly between 0 and 1");
  ND_CHECK_INPUT(o.tokenizer == "char" || o.tokenizer == "bpe",
                 "unknown tokenizer \"" << o.tokenizer << "\" (expected char or bpe)");
  if (o.tokenizer == "bpe")
    ND_CHECK_INPUT(o.vocab_size == 0 || o.vocab_size >= 256,
                   "BPE vocab size " << o.vocab_size << " is below 256, the byte tokens it starts from");
}

void make_output_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  ND_CHECK_INPUT(!ec, "cannot create output directory " << dir << ": " << ec.message());
  ND_CHECK_INPUT(std::filesystem::is_directory(dir, ec), "output path " << dir << " is not a directory");
  // Checked now so that a long BPE training does not end in a failed write.
  ND_CHECK_INPUT(::access(dir.c_str(), W_OK) == 0, "output directory " << dir << " is not writable");
}

// Philox stream of random-token data, apart from the streams training draws from.
constexpr uint64_t kRandomTokenStream = 7;

// `count` ids uniform in [0, vocab): counter first + i gives id i. 64 random bits reduced mod
// vocab (< 2^31) leave a bias below 2^-33.
std::vector<int32_t> random_ids(int64_t count, int64_t vocab, uint64_t seed, uint64_t first) {
  std::vector<int32_t> ids(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    Philox4 r = philox4x32(seed, first + static_cast<uint64_t>(i), kRandomTokenStream);
    uint64_t bits = (static_cast<uint64_t>(r.v[1]) << 32) | r.v[0];
    ids[static_cast<size_t>(i)] = static_cast<int32_t>(bits % static_cast<uint64_t>(vocab));
  }
  return ids;
}

// Maps a sub-job's progress [0, 1] onto [begin, end] of the whole job.
ProgressFn sub_progress(const ProgressFn& whole, double begin, double end) {
  if (!whole) return {};
  return [whole, begin, end](double f) { whole(begin + (end - begin) * f); };
}

}  // namespace

PrepareStats prepare(const PrepareOptions& options) {
  if (options.random_tokens > 0) return prepare_random_tokens(options);
  validate(options);
  if (!options.inputs.empty()) {
    std::string source;
    for (const std::string& path : options.inputs) source += (source.empty() ? "" : ", ") + path;
    return prepare_text(read_text_files(options.inputs), source, options);
  }
  return prepare_text(read_named_corpus(options.corpus), "corpus " + options.corpus, options);
}

PrepareStats prepare_text(const std::string& text, const std::string& source, const PrepareOptions& options) {
  validate(options);
  ND_CHECK_INPUT(!text.empty(), "the input text (" << source << ") is empty");
  make_output_dir(options.out_dir);

  std::unique_ptr<Tokenizer> tokenizer;
  std::vector<int32_t> tokens;
  if (!options.tokenizer_text.empty()) {
    tokenizer = Tokenizer::from_text(options.tokenizer_text, options.tokenizer_source);
    try {
      tokens = tokenizer->encode(text, sub_progress(options.progress, 0.0, 0.9));
    } catch (const Error& e) {
      ND_FAIL_INPUT(source << ": " << e.message() << " of " << options.tokenizer_source
                           << " (a char tokenizer knows only the characters of the text it was made from; a bpe one "
                              "encodes any text)");
    }
  } else if (options.tokenizer == "char") {
    tokenizer = std::make_unique<CharTokenizer>(CharTokenizer::train(text));
    tokens = tokenizer->encode(text, sub_progress(options.progress, 0.0, 0.9));
  } else {
    int64_t vocab = options.vocab_size == 0 ? kDefaultBpeVocabSize : options.vocab_size;
    ProgressFn training_progress = sub_progress(options.progress, 0.0, 0.6);
    tokenizer = std::make_unique<BpeTokenizer>(BpeTokenizer::train(text, vocab, training_progress));
    tokens = tokenizer->encode(text, sub_progress(options.progress, 0.6, 0.9));
  }

  int64_t n = static_cast<int64_t>(tokens.size());
  int64_t val_tokens = static_cast<int64_t>(std::llround(static_cast<double>(n) * options.val_fraction));
  ND_CHECK_INPUT(val_tokens >= 1 && val_tokens < n,
                 source << " gives " << n << " tokens, too few to split with val fraction " << options.val_fraction
                        << " (" << val_tokens << " val tokens)");
  std::vector<int32_t> train(tokens.begin(), tokens.end() - val_tokens);
  std::vector<int32_t> val(tokens.end() - val_tokens, tokens.end());

  PrepareStats stats;
  std::filesystem::path dir(options.out_dir);
  stats.train_path = (dir / "train.bin").string();
  stats.val_path = (dir / "val.bin").string();
  stats.tokenizer_path = (dir / "tokenizer.txt").string();
  tokenizer->save(stats.tokenizer_path);
  write_token_file(stats.train_path, train, tokenizer->vocab_size());
  write_token_file(stats.val_path, val, tokenizer->vocab_size());
  if (options.progress) options.progress(1.0);

  stats.source = source;
  stats.chars = static_cast<int64_t>(text.size());
  stats.tokens = n;
  stats.vocab_size = tokenizer->vocab_size();
  stats.chars_per_token = static_cast<double>(stats.chars) / static_cast<double>(n);
  stats.train_tokens = static_cast<int64_t>(train.size());
  stats.val_tokens = val_tokens;
  return stats;
}

PrepareStats prepare_random_tokens(const PrepareOptions& options) {
  ND_CHECK_INPUT(!options.out_dir.empty(), "prepare needs an output directory (--out)");
  ND_CHECK_INPUT(options.inputs.empty(), "random tokens take no --input files");
  ND_CHECK_INPUT(options.vocab_size >= 1 && options.vocab_size <= INT32_MAX,
                 "random tokens need a vocabulary size in [1, " << INT32_MAX << "] (--vocab-size), got "
                                                                << options.vocab_size);
  ND_CHECK_INPUT(options.random_tokens >= 10,
                 "random tokens: " << options.random_tokens << " train tokens is too few (>= 10, so val.bin gets one)");
  make_output_dir(options.out_dir);
  IdTokenizer tokenizer(options.vocab_size);
  const int64_t train_count = options.random_tokens, val_count = options.random_tokens / 10;

  PrepareStats stats;
  std::filesystem::path dir(options.out_dir);
  stats.train_path = (dir / "train.bin").string();
  stats.val_path = (dir / "val.bin").string();
  stats.tokenizer_path = (dir / "tokenizer.txt").string();
  tokenizer.save(stats.tokenizer_path);
  write_token_file(stats.train_path, random_ids(train_count, options.vocab_size, options.seed, 0), options.vocab_size);
  if (options.progress) options.progress(0.9);
  write_token_file(stats.val_path,
                   random_ids(val_count, options.vocab_size, options.seed, static_cast<uint64_t>(train_count)),
                   options.vocab_size);
  if (options.progress) options.progress(1.0);

  stats.source = "random tokens, seed " + std::to_string(options.seed);
  stats.tokens = train_count + val_count;
  stats.vocab_size = options.vocab_size;
  stats.train_tokens = train_count;
  stats.val_tokens = val_count;
  return stats;
}

}  // namespace nd
