// Finding out what `--data` holds and opening both splits of it (see token_dataset.h).
#include "data/token_dataset.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <glob.h>

#include "data/atomic_file.h"
#include "data/foreign_token_files.h"
#include "data/gpt2_tokenizer.h"
#include "data/nanogpt_meta.h"
#include "data/prepare.h"
#include "data/prepare_finish.h"
#include "data/tokenizer.h"
#include "tensor/error.h"

namespace nd {
namespace {

namespace fs = std::filesystem;

enum class Split { Train, Val, Neither };

// "fineweb_train_000001.bin" -> Train: "train" or "val" must be a whole word of the name.
Split split_of(const std::string& path) {
  std::string stem = fs::path(path).stem().string(), word;
  bool train = false, val = false;
  for (size_t i = 0; i <= stem.size(); ++i) {
    if (i < stem.size() && std::isalnum(static_cast<unsigned char>(stem[i]))) {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(stem[i])));
      continue;
    }
    train |= word == "train";
    val |= word == "val";
    word.clear();
  }
  ND_CHECK_INPUT(!(train && val), path << " names both train and val: cannot tell which split it belongs to");
  return train ? Split::Train : val ? Split::Val : Split::Neither;
}

std::vector<std::string> glob_files(const std::string& pattern) {
  glob_t g{};
  int status = ::glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<std::string> out;
  if (status == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  ND_CHECK_INPUT(status == 0 || status == GLOB_NOMATCH, "cannot expand " << pattern);
  return out;
}

// llm.c shards of both splits, each split in name order, all with one magic.
TokenDataset open_llmc_shards(const std::vector<std::string>& files, const std::string& where, int64_t vocab_size,
                              DatasetSplits splits) {
  std::vector<std::string> train_files, val_files;
  for (const std::string& f : files) {
    Split s = split_of(f);
    ND_CHECK_INPUT(s != Split::Neither, "cannot tell whether " << f << " is training or validation data: "
                                                         << "\"train\" or \"val\" must be a word of its name");
    (s == Split::Train ? train_files : val_files).push_back(f);
  }
  const bool want_train = splits != DatasetSplits::Val, want_val = splits != DatasetSplits::Train;
  ND_CHECK_INPUT(!want_train || !train_files.empty(), "no training shards (*_train_*.bin) in " << where);
  ND_CHECK_INPUT(!want_val || !val_files.empty(), "no validation shards (*_val_*.bin) in " << where);
  int32_t first_magic = 0;
  std::string first_file;
  auto open_split = [&](std::vector<std::string> names) {
    std::sort(names.begin(), names.end());
    std::vector<TokenShard> shards;
    for (const std::string& name : names) {
      int32_t magic = 0;
      shards.push_back(open_llmc_shard(name, &magic));
      if (first_file.empty()) first_magic = magic, first_file = name;
      ND_CHECK_INPUT(magic == first_magic, name << " is an " << llmc_format_name(magic) << " shard but " << first_file
                                          << " is " << llmc_format_name(first_magic)
                                          << ": the shards of one dataset share one tokenizer");
    }
    return shards;
  };
  std::vector<TokenShard> train, val;
  if (want_train) train = open_split(train_files);
  if (want_val) val = open_split(val_files);
  TokenDataset data;
  data.vocab_size = vocab_size > 0 ? vocab_size : llmc_default_vocab_size(first_magic);
  if (want_train) data.train = std::make_shared<const TokenSource>(std::move(train), data.vocab_size);
  if (want_val) data.val = std::make_shared<const TokenSource>(std::move(val), data.vocab_size);
  data.format = llmc_format_name(first_magic) + " shards (" + std::to_string(train_files.size()) + " train, " +
                std::to_string(val_files.size()) + " val)";
  return data;
}

// A hint for a directory whose prepare has not finished, or "".
std::string unfinished_hint(const std::string& dir) {
  std::error_code ec;
  const fs::path work = fs::path(dir) / kPrepareWorkDir;
  if (!fs::exists(work, ec)) return "";
  return " (" + work.string() + " holds an unfinished nanodist prepare: rerun its command to finish it)";
}

// DIR/<split>.bin, else DIR/<split>_000000.bin, ... in name order, as prepare writes them.
std::vector<std::string> nanodist_split_files(const std::string& dir, const std::string& split) {
  const std::string single = dir + "/" + split + ".bin";
  std::error_code ec;
  if (fs::exists(single, ec)) return {single};
  std::vector<std::string> shards;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string() != split + ".bin" && is_prepared_split_name(e.path().filename().string(), split))
      shards.push_back(e.path().string());
  std::sort(shards.begin(), shards.end());
  const std::string hint = unfinished_hint(dir);
  ND_CHECK_INPUT(!shards.empty() || hint.empty(), "cannot open token file " << single << " (missing or not a file)"
                                                                            << hint);
  return shards.empty() ? std::vector<std::string>{single} : shards;  // opening it names what is wrong
}

// One split of a prepared directory, mapped; every file must record the same vocabulary.
std::shared_ptr<const TokenSource> open_nanodist_split(const std::string& dir, const std::string& split) {
  std::vector<TokenShard> shards;
  int64_t vocab = 0;
  std::string first;
  for (const std::string& path : nanodist_split_files(dir, split)) {
    int64_t v = 0;
    shards.push_back(map_token_file(path, &v));
    if (first.empty()) vocab = v, first = path;
    ND_CHECK_INPUT(v == vocab, "vocabulary mismatch: " << path << " has " << v << " tokens, " << first << " has " << vocab);
  }
  return std::make_shared<const TokenSource>(std::move(shards), vocab);
}

TokenDataset open_nanodist(const std::string& dir, int64_t vocab_size, DatasetSplits splits) {
  TokenDataset data;
  if (splits != DatasetSplits::Val) data.train = open_nanodist_split(dir, "train");
  if (splits != DatasetSplits::Train) data.val = open_nanodist_split(dir, "val");
  data.tokenizer_text = read_whole_file(dir + "/tokenizer.txt");
  std::unique_ptr<Tokenizer> tokenizer = Tokenizer::from_text(data.tokenizer_text, dir + "/tokenizer.txt");
  const std::string first = (data.train ? data.train : data.val)->name();
  data.vocab_size = (data.train ? data.train : data.val)->vocab_size();
  ND_CHECK_INPUT(!data.train || !data.val || data.val->vocab_size() == data.vocab_size,
           "vocabulary mismatch: " << data.train->name() << " has " << data.vocab_size << " tokens, "
                                   << data.val->name() << " has " << data.val->vocab_size());
  ND_CHECK_INPUT(tokenizer->vocab_size() == data.vocab_size, "vocabulary mismatch: " << first << " has "
                                                                               << data.vocab_size
                                                                               << " tokens, tokenizer.txt has "
                                                                               << tokenizer->vocab_size());
  ND_CHECK_INPUT(vocab_size == 0 || vocab_size == data.vocab_size,
           "--vocab-size " << vocab_size << " disagrees with " << first << ", whose header says "
                           << data.vocab_size << " (leave --vocab-size at 0 for nanodist data)");
  data.format = "nanodist " + tokenizer->kind();
  if (data.train && data.train->shards().size() > 1)
    data.format += " (" + std::to_string(data.train->shards().size()) + " train files)";
  return data;
}

// nanoGPT's raw u16 files; their vocabulary (and, for char data, the tokenizer) comes from the
// meta.pkl beside them when there is one, else from --vocab-size.
TokenDataset open_nanogpt(const std::string& dir, int64_t vocab_size, DatasetSplits splits) {
  std::error_code ec;
  const std::string meta_path = dir + "/meta.pkl";
  NanoGptMeta meta;
  if (fs::exists(meta_path, ec)) {
    meta = read_nanogpt_meta(meta_path);
    ND_CHECK_INPUT(vocab_size == 0 || vocab_size == meta.vocab_size,
                   "--vocab-size " << vocab_size << " disagrees with " << meta_path << ", whose vocab_size is "
                                   << meta.vocab_size << " (leave --vocab-size at 0 to take it from there)");
    vocab_size = meta.vocab_size;
  }
  ND_CHECK_INPUT(vocab_size > 0, dir << "/train.bin has no header (nanoGPT's raw uint16 tokens) and no meta.pkl beside "
                               << "it, so nothing records its vocabulary: pass --vocab-size (50257 for GPT-2 BPE)");
  TokenDataset data;
  data.tokenizer_text = char_tokenizer_text_from_meta(meta);
  data.vocab_size = vocab_size;
  if (splits != DatasetSplits::Val)
    data.train = std::make_shared<const TokenSource>(std::vector<TokenShard>{open_nanogpt_raw(dir + "/train.bin")},
                                                     vocab_size);
  if (splits != DatasetSplits::Train)
    data.val = std::make_shared<const TokenSource>(std::vector<TokenShard>{open_nanogpt_raw(dir + "/val.bin")},
                                                   vocab_size);
  data.format = "nanoGPT uint16";
  if (!meta.itos.empty())
    data.format += data.tokenizer_text.empty() ? " (meta.pkl: characters beyond ASCII, not decoded)"
                                               : " with meta.pkl's characters";
  return data;
}

TokenDataset open_glob(const std::string& pattern, int64_t vocab_size, DatasetSplits splits) {
  std::vector<std::string> files = glob_files(pattern);
  ND_CHECK_INPUT(!files.empty(), "no file matches " << pattern);
  fs::path p(pattern);
  std::string name = p.filename().string();
  size_t at = name.rfind("train");
  if (at != std::string::npos) {  // fineweb_train_*.bin -> fineweb_val_*.bin too
    std::string twin = (p.parent_path() / (name.substr(0, at) + "val" + name.substr(at + 5))).string();
    for (const std::string& f : glob_files(twin))
      if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(f);
  }
  return open_llmc_shards(files, pattern, vocab_size, splits);
}

TokenDataset open_directory_files(const std::string& dir, int64_t vocab_size, DatasetSplits splits);

// llm.c or nanoGPT data with GPT-2's tokenizer files beside them (tokenizer.json, or vocab.json +
// merges.txt, as Hugging Face ships them): that tokenizer, so sample and eval can read text.
TokenDataset with_hugging_face_tokenizer(TokenDataset data, const std::string& dir) {
  if (!has_hugging_face_tokenizer(dir)) return data;
  data.tokenizer_text = gpt2_tokenizer_text_from_dir(dir);
  const int32_t tokens = Tokenizer::from_text(data.tokenizer_text, dir)->vocab_size();
  ND_CHECK_INPUT(tokens == data.vocab_size, "vocabulary mismatch: the GPT-2 tokenizer files in " << dir << " have "
                                                << tokens << " tokens, the token files " << data.vocab_size);
  data.format += " with GPT-2's tokenizer";
  return data;
}

TokenDataset open_directory(const std::string& dir, int64_t vocab_size, DatasetSplits splits) {
  return with_hugging_face_tokenizer(open_directory_files(dir, vocab_size, splits), dir);
}

TokenDataset open_directory_files(const std::string& dir, int64_t vocab_size, DatasetSplits splits) {
  std::error_code ec;
  if (records_vocab_size(dir)) return open_nanodist(dir, vocab_size, splits);
  bool pair = fs::exists(dir + "/train.bin", ec) || fs::exists(dir + "/val.bin", ec);
  if (pair) {
    const std::string probe = dir + (splits == DatasetSplits::Val ? "/val.bin" : "/train.bin");
    int32_t magic = peek_magic(probe);
    ND_CHECK_INPUT(magic != kTokenFileMagic, probe << " is a nanodist token file but " << dir
                                           << "/tokenizer.txt is missing (rerun nanodist prepare)");
    if (is_llmc_magic(magic))
      return open_llmc_shards({dir + "/train.bin", dir + "/val.bin"}, dir, vocab_size, splits);
    return open_nanogpt(dir, vocab_size, splits);
  }
  std::vector<std::string> shards;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".bin") shards.push_back(e.path().string());
  ND_CHECK_INPUT(!shards.empty(), dir << " holds no token files: expected train.bin + val.bin (nanodist prepare or "
                                << "nanoGPT) or llm.c shards *_train_*.bin + *_val_*.bin" << unfinished_hint(dir));
  return open_llmc_shards(shards, dir, vocab_size, splits);
}

// --data naming a file: a token file is one of a directory's files, anything else is taken for
// the raw text that prepare turns into such a directory.
[[noreturn]] void refuse_file(const std::string& data) {
  const int32_t magic = peek_magic(data);
  if (magic == kTokenFileMagic || is_llmc_magic(magic) || fs::path(data).extension() == ".bin") {
    std::string dir = fs::path(data).parent_path().string();
    ND_FAIL_INPUT("--data " << data << " is a file; --data names the directory that holds it (" << data << " -> "
                            << (dir.empty() ? "." : dir) << "), or a glob of llm.c shards");
  }
  ND_FAIL_INPUT("--data " << data << " is a text file, not token data: tokenize it first with `nanodist prepare "
                          << "--input " << data << " --out DIR`, then train with --data DIR");
}

}  // namespace

bool records_vocab_size(const std::string& data) {
  std::error_code ec;
  return fs::exists(data + "/tokenizer.txt", ec);
}

TokenDataset open_token_dataset(const std::string& data, int64_t vocab_size, DatasetSplits splits) {
  ND_CHECK_INPUT(vocab_size >= 0, "--vocab-size must be >= 0 (0 = from the data), got " << vocab_size);
  if (data.find_first_of("*?[") != std::string::npos) return open_glob(data, vocab_size, splits);
  std::error_code ec;
  if (fs::exists(data, ec) && !fs::is_directory(data, ec)) refuse_file(data);
  ND_CHECK_INPUT(fs::is_directory(data, ec),
           "data directory " << data << " does not exist (make it with nanodist prepare --out " << data
                             << ", or point --data at llm.c shards)");
  return open_directory(data, vocab_size, splits);
}

}  // namespace nd
