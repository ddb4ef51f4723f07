// prepare(): validate everything cheap first, then learn the tokenizer (or resume a job), encode
// the text into parts (prepare_encode.h) and split them into the output files (prepare_finish.h).
#include "data/prepare.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <climits>
#include <cmath>
#include <filesystem>
#include <memory>
#include <sstream>
#include <thread>

#include "data/atomic_file.h"
#include "data/bpe_tokenizer.h"
#include "data/char_tokenizer.h"
#include "data/corpus.h"
#include "data/id_tokenizer.h"
#include "data/prepare_encode.h"
#include "data/prepare_finish.h"
#include "data/prepare_state.h"
#include "data/text_pieces.h"
#include "data/text_stream.h"
#include "data/token_file.h"
#include "tensor/error.h"
#include "tensor/philox.h"

namespace nd {
namespace {

int64_t bpe_vocab(const PrepareOptions& o) { return o.vocab_size == 0 ? kDefaultBpeVocabSize : o.vocab_size; }

void validate(const PrepareOptions& o) {
  ND_CHECK_INPUT(!o.out_dir.empty(), "prepare needs an output directory (--out)");
  ND_CHECK_INPUT(o.shard_tokens >= 1 && o.shard_tokens <= INT32_MAX,
                 "shard size " << o.shard_tokens << " tokens must lie in [1, " << INT32_MAX << "]");
  ND_CHECK_INPUT(o.bpe_sample_bytes >= 1, "BPE sample of " << o.bpe_sample_bytes << " bytes must be positive");
  ND_CHECK(o.piece_bytes >= 1 && o.threads >= 0 && o.checkpoint_seconds >= 0, "prepare: bad tuning options");
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

// What decides the files a job writes; an unfinished job goes on only under the same lines.
std::string job_description(const TextStream& stream, const PrepareOptions& o) {
  std::ostringstream job;
  std::istringstream text_lines(stream.description());
  for (std::string line; std::getline(text_lines, line);) job << "job " << line << "\n";
  if (!o.tokenizer_text.empty())
    job << "job tokenizer-from " << fnv1a_hex(o.tokenizer_text) << "\n";
  else if (o.tokenizer == "bpe")
    job << "job tokenizer bpe vocab " << bpe_vocab(o) << " sample " << o.bpe_sample_bytes << "\n";
  else
    job << "job tokenizer char\n";
  char fraction[32];  // the shortest text that reads back as the same double
  *std::to_chars(fraction, fraction + sizeof fraction - 1, o.val_fraction).ptr = '\0';
  job << "job val_fraction " << fraction << "\n" << "job shard_tokens " << o.shard_tokens << "\n";
  return job.str();
}

// The char vocabulary: every byte value the text holds, found in one pass over it.
std::unique_ptr<Tokenizer> char_vocabulary(const TextStream& stream, const ProgressFn& progress) {
  std::array<bool, 256> seen{};
  std::string block;
  constexpr int64_t kBlock = int64_t{16} << 20;
  for (int64_t at = 0; at < stream.size(); at += kBlock) {
    stream.read(at, kBlock, block);
    for (unsigned char c : block) seen[c] = true;
    if (progress) progress(static_cast<double>(at + static_cast<int64_t>(block.size())) / stream.size());
  }
  std::vector<unsigned char> symbols;
  for (int b = 0; b < 256; ++b)
    if (seen[b]) symbols.push_back(static_cast<unsigned char>(b));
  return std::make_unique<CharTokenizer>(std::move(symbols));
}

// The tokenizer a fresh job encodes with: the given one, or one learned from the text.
std::unique_ptr<Tokenizer> make_tokenizer(const TextStream& stream, const PrepareOptions& o, const ProgressFn& progress) {
  if (!o.tokenizer_text.empty()) return Tokenizer::from_text(o.tokenizer_text, o.tokenizer_source);
  if (o.tokenizer == "char") return char_vocabulary(stream, progress);
  const std::string sample = read_sample(stream, o.bpe_sample_bytes);
  return std::make_unique<BpeTokenizer>(BpeTokenizer::train(sample, bpe_vocab(o), progress));
}

// The share of the progress bar that learning the tokenizer takes.
double learning_share(const PrepareOptions& o) {
  if (!o.tokenizer_text.empty()) return 0.0;
  return o.tokenizer == "bpe" ? 0.3 : 0.05;
}

int encoding_threads(const PrepareOptions& o) {
  if (o.threads > 0) return o.threads;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// Maps a sub-job's progress [0, 1] onto [begin, end] of the whole job.
ProgressFn sub_progress(const ProgressFn& whole, double begin, double end) {
  if (!whole) return {};
  return [whole, begin, end](double f) { whole(begin + (end - begin) * f); };
}

// Reads the state of an unfinished job in `work`, or starts one: tokenizer learned and saved,
// state written. Returns the tokenizer; stats.resumed_at says which it was.
std::unique_ptr<Tokenizer> start_or_resume(const TextStream& stream, const PrepareOptions& o, const std::string& work,
                                           PrepareState& state, PrepareStats& stats) {
  const std::string job = job_description(stream, o);
  const std::string tokenizer_path = (std::filesystem::path(work) / "tokenizer.txt").string();
  std::error_code ec;
  if (std::filesystem::exists(state_path(work), ec)) {
    state = read_prepare_state(state_path(work));
    ND_CHECK_INPUT(state.job == job, o.out_dir << " holds an unfinished prepare of other inputs or options (its "
                                               << first_difference(state.job, job)
                                               << "): rerun that command to finish it, or delete " << work
                                               << " to start over");
    const std::string tokenizer_text = read_whole_file(tokenizer_path);
    ND_CHECK_INPUT(fnv1a_hex(tokenizer_text) == state.tokenizer_hash,
                   tokenizer_path << " is not the tokenizer the unfinished prepare began with: delete " << work
                                  << " to start over");
    stats.resumed_at = state.offset;
    return Tokenizer::from_text(tokenizer_text, tokenizer_path);
  }
  std::filesystem::remove_all(work, ec);
  std::filesystem::create_directories(work, ec);
  ND_CHECK_INPUT(!ec, "cannot create " << work << ": " << ec.message());
  std::unique_ptr<Tokenizer> tokenizer = make_tokenizer(stream, o, sub_progress(o.progress, 0.0, learning_share(o)));
  tokenizer->save(tokenizer_path);
  state = PrepareState{};
  state.job = job;
  state.tokenizer_hash = fnv1a_hex(read_whole_file(tokenizer_path));
  write_prepare_state(state_path(work), state);
  return tokenizer;
}

PrepareStats prepare_stream(const TextStream& stream, const PrepareOptions& o) {
  ND_CHECK_INPUT(stream.size() > 0, "the input text (" << stream.name() << ") is empty");
  make_output_dir(o.out_dir);
  const std::string work = (std::filesystem::path(o.out_dir) / kPrepareWorkDir).string();
  PrepareState state;
  PrepareStats stats;
  std::unique_ptr<Tokenizer> tokenizer = start_or_resume(stream, o, work, state, stats);
  if (state.offset < stream.size()) {
    EncodeJob job;
    job.stream = &stream;
    job.tokenizer = tokenizer.get();
    job.work_dir = work;
    job.shard_tokens = o.shard_tokens;
    job.piece_bytes = o.piece_bytes;
    job.threads = encoding_threads(o);
    job.checkpoint_seconds = o.checkpoint_seconds;
    if (!o.tokenizer_text.empty())
      job.error_hint = " of " + o.tokenizer_source +
                       " (a char tokenizer knows only the characters of the text it was made from; a bpe one encodes "
                       "any text)";
    job.progress = sub_progress(o.progress, learning_share(o), 0.99);
    encode_into_parts(job, state);
  }
  const FinishedSplits splits =
      finish_prepare(o.out_dir, work, state, tokenizer->vocab_size(), o.val_fraction, stream.name());
  if (o.progress) o.progress(1.0);

  std::filesystem::path dir(o.out_dir);
  stats.source = stream.name();
  stats.chars = stream.size();
  stats.tokens = splits.train_tokens + splits.val_tokens;
  stats.vocab_size = tokenizer->vocab_size();
  stats.chars_per_token = static_cast<double>(stats.chars) / static_cast<double>(stats.tokens);
  stats.train_tokens = splits.train_tokens;
  stats.val_tokens = splits.val_tokens;
  stats.train_path = splits.train.front();
  stats.val_path = splits.val.front();
  stats.train_files = static_cast<int64_t>(splits.train.size());
  stats.val_files = static_cast<int64_t>(splits.val.size());
  stats.tokenizer_path = (dir / "tokenizer.txt").string();
  return stats;
}

}  // namespace

PrepareStats prepare(const PrepareOptions& options) {
  if (options.random_tokens > 0) return prepare_random_tokens(options);
  validate(options);
  if (!options.inputs.empty())
    return prepare_stream(TextStream::of_files(expand_text_inputs(options.inputs, options.out_dir)), options);
  return prepare_stream(TextStream::of_text(read_named_corpus(options.corpus), "corpus " + options.corpus), options);
}

PrepareStats prepare_text(const std::string& text, const std::string& source, const PrepareOptions& options) {
  validate(options);
  return prepare_stream(TextStream::of_text(text, source), options);
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
