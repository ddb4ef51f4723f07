// The load() / from_text() factory and the escaping used by the tokenizer files.
#include "data/tokenizer.h"

#include <sstream>

#include "data/atomic_file.h"
#include "data/bpe_tokenizer.h"
#include "data/char_tokenizer.h"
#include "data/gpt2_tokenizer.h"
#include "data/id_tokenizer.h"
#include "tensor/error.h"

namespace nd {

std::unique_ptr<Tokenizer> Tokenizer::load(const std::string& path) { return from_text(read_whole_file(path), path); }

std::unique_ptr<Tokenizer> Tokenizer::from_text(const std::string& text, const std::string& source) {
  std::string first_line = text.substr(0, text.find('\n'));
  std::istringstream words(first_line);
  std::string tag, kind;
  words >> tag >> kind;
  ND_CHECK_INPUT(tag == kTokenizerFileTag, source << " is not a nanodist tokenizer file (first line \""
                                                << escape_bytes(first_line.substr(0, 60)) << "\")");
  if (kind == "char") return std::make_unique<CharTokenizer>(CharTokenizer::parse(text, source));
  if (kind == "bpe") return std::make_unique<BpeTokenizer>(BpeTokenizer::parse(text, source));
  if (kind == "ids") return std::make_unique<IdTokenizer>(IdTokenizer::parse(text, source));
  if (kind == "gpt2") return std::make_unique<Gpt2Tokenizer>(Gpt2Tokenizer::parse(text, source));
  ND_FAIL_INPUT(source << ": unknown tokenizer kind \"" << escape_bytes(kind) << "\" (expected char, bpe, ids or gpt2)");
}

std::string escape_bytes(const std::string& bytes) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c >= 0x20 && c < 0x7f) out += static_cast<char>(c);
    else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace nd
