// The tokenizer interface shared by the char, byte-level BPE and bare-id tokenizers, and the
// factory that loads any of them from its plain-text file (the first line names the kind).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace nd {

// Called with the fraction of a long job done, in [0, 1]. Library code never prints.
using ProgressFn = std::function<void(double fraction)>;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  virtual std::string kind() const = 0;  // "char", "bpe", "ids" or "gpt2"
  virtual int32_t vocab_size() const = 0;
  // Raises nd::Error when the text holds something the vocabulary cannot express.
  virtual std::vector<int32_t> encode(const std::string& text, const ProgressFn& progress) const = 0;
  std::vector<int32_t> encode(const std::string& text) const { return encode(text, ProgressFn()); }
  // Raises nd::Error on an id outside [0, vocab_size()).
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  // Writes the human-readable tokenizer file atomically.
  virtual void save(const std::string& path) const = 0;

  // Reads a file written by save(); the first line "nanodist-tokenizer <kind>" picks the class.
  static std::unique_ptr<Tokenizer> load(const std::string& path);
  // The same from the file's text already in memory (a checkpoint's /tokenizer); `source` names
  // it in errors. The one place that maps kinds to classes.
  static std::unique_ptr<Tokenizer> from_text(const std::string& text, const std::string& source);
};

// The first line of every tokenizer file, followed by a space and the kind.
constexpr const char* kTokenizerFileTag = "nanodist-tokenizer";

// Bytes as a C-like quoted string for humans: printable ASCII as is, \n \t \r \\ \" and \xHH.
std::string escape_bytes(const std::string& bytes);

}  // namespace nd
