// Char tokenizer: training, encode/decode, and its file ("nanodist-tokenizer char", then
// "vocab_size N", then one line per id: id, byte value, the byte escaped for humans).
#include "data/char_tokenizer.h"

#include <sstream>

#include "data/atomic_file.h"
#include "tensor/error.h"

namespace nd {

CharTokenizer CharTokenizer::train(const std::string& text) {
  ND_CHECK_INPUT(!text.empty(), "cannot build a char vocabulary from an empty text");
  std::array<bool, 256> seen{};
  for (unsigned char c : text) seen[c] = true;
  std::vector<unsigned char> symbols;
  for (int b = 0; b < 256; ++b)
    if (seen[b]) symbols.push_back(static_cast<unsigned char>(b));
  return CharTokenizer(std::move(symbols));
}

CharTokenizer::CharTokenizer(std::vector<unsigned char> symbols) : symbols_(std::move(symbols)) {
  ND_CHECK(!symbols_.empty(), "a char vocabulary needs at least one symbol");
  id_of_byte_.fill(-1);
  for (size_t i = 0; i < symbols_.size(); ++i) {
    ND_CHECK(i == 0 || symbols_[i] > symbols_[i - 1],
             "char vocabulary must be strictly increasing: byte " << int(symbols_[i]) << " at id " << i);
    id_of_byte_[symbols_[i]] = static_cast<int32_t>(i);
  }
}

std::vector<int32_t> CharTokenizer::encode(const std::string& text, const ProgressFn& progress) const {
  std::vector<int32_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    int32_t id = id_of_byte_[c];
    ND_CHECK_INPUT(id >= 0, "byte " << int(c) << " (\"" << escape_bytes(std::string(1, text[i])) << "\") at offset "
                                    << i << " is not in the char vocabulary of " << symbols_.size() << " symbols");
    ids[i] = id;
  }
  if (progress) progress(1.0);
  return ids;
}

std::string CharTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string text(ids.size(), '\0');
  for (size_t i = 0; i < ids.size(); ++i) {
    ND_CHECK(ids[i] >= 0 && ids[i] < vocab_size(),
             "token " << ids[i] << " at position " << i << " is outside the char vocabulary of size " << vocab_size());
    text[i] = static_cast<char>(symbols_[static_cast<size_t>(ids[i])]);
  }
  return text;
}

void CharTokenizer::save(const std::string& path) const { write_file_atomically(path, to_text()); }

std::string CharTokenizer::to_text() const {
  std::ostringstream out;
  out << kTokenizerFileTag << " char\n";
  out << "vocab_size " << symbols_.size() << "\n";
  out << "# id byte text\n";
  for (size_t i = 0; i < symbols_.size(); ++i)
    out << i << " " << int(symbols_[i]) << " \"" << escape_bytes(std::string(1, static_cast<char>(symbols_[i])))
        << "\"\n";
  return out.str();
}

CharTokenizer CharTokenizer::parse(const std::string& file_text, const std::string& path) {
  std::istringstream lines(file_text);
  std::string line;
  std::getline(lines, line);  // the tag line, already checked by Tokenizer::load
  int64_t vocab_size = -1;
  std::vector<unsigned char> symbols;
  int line_number = 1;
  while (std::getline(lines, line)) {
    ++line_number;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    if (vocab_size < 0) {
      std::string key;
      ND_CHECK_INPUT((fields >> key >> vocab_size) && key == "vocab_size" && vocab_size > 0 && vocab_size <= 256,
                     path << ":" << line_number << ": expected \"vocab_size N\" with 1 <= N <= 256");
      continue;
    }
    int64_t id = -1, byte = -1;
    ND_CHECK_INPUT(fields >> id >> byte, path << ":" << line_number << ": expected \"id byte\"");
    ND_CHECK_INPUT(id == static_cast<int64_t>(symbols.size()),
                   path << ":" << line_number << ": id " << id << ", expected " << symbols.size());
    ND_CHECK_INPUT(byte >= 0 && byte < 256,
                   path << ":" << line_number << ": byte value " << byte << " outside [0, 256)");
    ND_CHECK_INPUT(symbols.empty() || byte > symbols.back(),
                   path << ":" << line_number << ": byte " << byte << " breaks the increasing order of the vocabulary");
    symbols.push_back(static_cast<unsigned char>(byte));
  }
  ND_CHECK_INPUT(vocab_size > 0, path << ": no vocab_size line");
  ND_CHECK_INPUT(static_cast<int64_t>(symbols.size()) == vocab_size,
                 path << ": " << symbols.size() << " symbols listed but vocab_size is " << vocab_size);
  return CharTokenizer(std::move(symbols));
}

}  // namespace nd
