// Id tokenizer: decimal ids in and out, checked against the vocabulary size, and its two-line file.
#include "data/id_tokenizer.h"

#include <sstream>

#include "data/atomic_file.h"
#include "tensor/error.h"

namespace nd {
namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace

IdTokenizer::IdTokenizer(int64_t vocab_size) : vocab_size_(static_cast<int32_t>(vocab_size)) {
  ND_CHECK_INPUT(vocab_size >= 1 && vocab_size <= INT32_MAX,
                 "an id vocabulary needs a size in [1, " << INT32_MAX << "], got " << vocab_size);
}

std::vector<int32_t> IdTokenizer::encode(const std::string& text, const ProgressFn& progress) const {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < text.size()) {
    if (is_space(text[i])) {
      ++i;
      continue;
    }
    size_t begin = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    std::string word = text.substr(begin, i - begin);
    // Digits only (no sign); the length cap keeps the value inside int64 before the range check.
    bool digits = word.size() <= 18 && word.find_first_not_of("0123456789") == std::string::npos;
    ND_CHECK_INPUT(digits, "\"" << escape_bytes(word.substr(0, 40)) << "\" at offset " << begin
                                << " is not a token id (decimal digits, below " << vocab_size_ << ")");
    int64_t id = std::stoll(word);
    ND_CHECK_INPUT(id < vocab_size_,
                   "token id " << id << " at offset " << begin << " is outside the id vocabulary of size "
                               << vocab_size_);
    ids.push_back(static_cast<int32_t>(id));
  }
  if (progress) progress(1.0);
  return ids;
}

std::string IdTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    ND_CHECK(ids[i] >= 0 && ids[i] < vocab_size_,
             "token " << ids[i] << " at position " << i << " is outside the id vocabulary of size " << vocab_size_);
    if (i > 0) text += ' ';
    text += std::to_string(ids[i]);
  }
  return text;
}

void IdTokenizer::save(const std::string& path) const {
  std::ostringstream out;
  out << kTokenizerFileTag << " ids\n";
  out << "vocab_size " << vocab_size_ << "\n";
  write_file_atomically(path, out.str());
}

IdTokenizer IdTokenizer::parse(const std::string& file_text, const std::string& path) {
  std::istringstream lines(file_text);
  std::string line;
  std::getline(lines, line);  // the tag line, already checked by Tokenizer::from_text
  int64_t vocab_size = -1;
  int line_number = 1;
  while (std::getline(lines, line)) {
    ++line_number;
    if (line.empty() || line[0] == '#') continue;
    ND_CHECK_INPUT(vocab_size < 0, path << ":" << line_number << ": unexpected line after vocab_size");
    std::istringstream fields(line);
    std::string key, rest;
    ND_CHECK_INPUT((fields >> key >> vocab_size) && key == "vocab_size" && vocab_size >= 1 && vocab_size <= INT32_MAX &&
                       !(fields >> rest),
                   path << ":" << line_number << ": expected \"vocab_size N\" with N >= 1");
  }
  ND_CHECK_INPUT(vocab_size > 0, path << ": no vocab_size line");
  return IdTokenizer(vocab_size);
}

}  // namespace nd
