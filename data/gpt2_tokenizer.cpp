// GPT-2's tokenizer files to a "gpt2" nanodist tokenizer, and that tokenizer (gpt2_tokenizer.h).
#include "data/gpt2_tokenizer.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <map>
#include <sstream>

#include "data/atomic_file.h"
#include "data/json_value.h"
#include "tensor/error.h"

namespace nd {
namespace {

namespace fs = std::filesystem;

std::string utf8(unsigned code) {
  std::string out;
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else {  // bytes_to_unicode stays below U+0800
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
  return out;
}

// GPT-2's bytes_to_unicode: the character that stands for each byte in vocab.json and merges.txt.
// Printable Latin-1 bytes stand for themselves; the others take U+0100 on, in byte order.
std::vector<std::string> byte_characters() {
  std::vector<std::string> out(256);
  unsigned extra = 0;
  for (unsigned b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    out[b] = utf8(printable ? b : 256 + extra++);
  }
  return out;
}

// Special tokens are written between quotes as they are: printable ASCII without quotes or
// backslashes, as GPT-2's <|endoftext|>.
bool plain_special(const std::string& text) {
  if (text.empty()) return false;
  for (unsigned char c : text)
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') return false;
  return true;
}

}  // namespace

Gpt2Tokenizer::Gpt2Tokenizer(std::vector<int32_t> byte_ids, const std::vector<BpeMerge>& merges,
                             std::vector<std::pair<int32_t, std::string>> specials)
    : byte_ids_(std::move(byte_ids)), byte_of_(256, -1), merges_(merges), specials_(std::move(specials)),
      bpe_(std::vector<BpeMerge>{}) {
  ND_CHECK_INPUT(byte_ids_.size() == 256, "a gpt2 tokenizer needs 256 byte ids, got " << byte_ids_.size());
  for (int b = 0; b < 256; ++b) {
    const int32_t id = byte_ids_[b];
    ND_CHECK_INPUT(id >= 0 && id < 256 && byte_of_[id] < 0, "gpt2 tokenizer: the byte ids are no permutation of 0..255");
    byte_of_[id] = b;
  }
  auto to_bytes_id = [this](int32_t id) { return id < 256 ? byte_of_[id] : id; };
  std::vector<BpeMerge> in_byte_ids;
  for (size_t i = 0; i < merges_.size(); ++i) {
    const BpeMerge& m = merges_[i];
    const int64_t id = 256 + static_cast<int64_t>(i);
    ND_CHECK_INPUT(m.left >= 0 && m.left < id && m.right >= 0 && m.right < id,
                   "gpt2 tokenizer: merge " << i << " (" << m.left << ", " << m.right << ") must join ids below " << id);
    in_byte_ids.push_back({to_bytes_id(m.left), to_bytes_id(m.right)});
  }
  bpe_ = BpeTokenizer(in_byte_ids);
  for (size_t i = 0; i < specials_.size(); ++i)
    ND_CHECK_INPUT(specials_[i].first == static_cast<int32_t>(256 + merges_.size() + i) && plain_special(specials_[i].second),
                   "gpt2 tokenizer: special token " << specials_[i].first << " is not the next id after the merges "
                                                    << "or not plain ASCII");
}

int32_t Gpt2Tokenizer::vocab_size() const { return static_cast<int32_t>(256 + merges_.size() + specials_.size()); }

std::vector<int32_t> Gpt2Tokenizer::encode(const std::string& text, const ProgressFn& progress) const {
  std::vector<int32_t> ids = bpe_.encode(text, progress);
  for (int32_t& id : ids)
    if (id < 256) id = byte_ids_[id];
  return ids;
}

std::string Gpt2Tokenizer::decode(const std::vector<int32_t>& ids) const {
  const int32_t first_special = static_cast<int32_t>(256 + merges_.size());
  std::string out;
  std::vector<int32_t> run;
  for (int32_t id : ids) {
    ND_CHECK_INPUT(id >= 0 && id < vocab_size(), "token id " << id << " is outside the vocabulary of " << vocab_size());
    if (id >= first_special) {
      out += bpe_.decode(run);
      run.clear();
      out += specials_[static_cast<size_t>(id - first_special)].second;
      continue;
    }
    run.push_back(id < 256 ? byte_of_[id] : id);
  }
  return out + bpe_.decode(run);
}

std::string Gpt2Tokenizer::file_text() const {
  std::ostringstream out;
  out << kTokenizerFileTag << " gpt2\n";
  out << "vocab_size " << vocab_size() << "\n";
  out << "byte_ids";
  for (int32_t id : byte_ids_) out << " " << id;
  out << "\nmerges " << merges_.size() << "\nspecials " << specials_.size() << "\n";
  out << "# GPT-2's ids: byte_ids[b] is byte b's; merge lines are new_id left right; then special id \"text\"\n";
  for (size_t i = 0; i < merges_.size(); ++i) out << 256 + i << " " << merges_[i].left << " " << merges_[i].right << "\n";
  for (const auto& [id, text] : specials_) out << "special " << id << " \"" << text << "\"\n";
  return out.str();
}

void Gpt2Tokenizer::save(const std::string& path) const { write_file_atomically(path, file_text()); }

Gpt2Tokenizer Gpt2Tokenizer::parse(const std::string& file_text, const std::string& path) {
  std::istringstream lines(file_text);
  std::string line;
  std::getline(lines, line);  // the tag line
  std::vector<int32_t> byte_ids;
  std::vector<BpeMerge> merges;
  std::vector<std::pair<int32_t, std::string>> specials;
  int64_t merge_count = -1, special_count = -1;
  int number = 1;
  while (std::getline(lines, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    const std::string where = path + ":" + std::to_string(number);
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (key == "vocab_size") continue;  // follows from the rest
    if (key == "byte_ids") {
      for (int32_t id; fields >> id;) byte_ids.push_back(id);
    } else if (key == "merges") {
      ND_CHECK_INPUT(static_cast<bool>(fields >> merge_count), where << ": expected \"merges M\"");
    } else if (key == "specials") {
      ND_CHECK_INPUT(static_cast<bool>(fields >> special_count), where << ": expected \"specials S\"");
    } else if (key == "special") {
      int32_t id = -1;
      fields >> id;
      const size_t open = line.find('"'), close = line.rfind('"');
      ND_CHECK_INPUT(id >= 0 && open != std::string::npos && close > open, where << ": expected special ID \"text\"");
      specials.emplace_back(id, line.substr(open + 1, close - open - 1));
    } else {
      ND_CHECK_INPUT(!key.empty() && key.size() <= 18 && key.find_first_not_of("0123456789") == std::string::npos,
                     where << ": expected a key (vocab_size, byte_ids, merges, specials, special) or a merge line");
      int64_t new_id = std::stoll(key);
      BpeMerge m{-1, -1};
      ND_CHECK_INPUT((fields >> m.left >> m.right) && new_id == static_cast<int64_t>(256 + merges.size()),
                     where << ": expected merge line \"" << 256 + merges.size() << " left right\"");
      merges.push_back(m);
    }
  }
  ND_CHECK_INPUT(merge_count == static_cast<int64_t>(merges.size()) &&
                     special_count == static_cast<int64_t>(specials.size()),
                 path << ": the merge or special token count does not match its lines");
  return Gpt2Tokenizer(std::move(byte_ids), merges, std::move(specials));
}

bool has_hugging_face_tokenizer(const std::string& dir) {
  std::error_code ec;
  return fs::exists(fs::path(dir) / "tokenizer.json", ec) ||
         (fs::exists(fs::path(dir) / "vocab.json", ec) && fs::exists(fs::path(dir) / "merges.txt", ec));
}

std::string gpt2_tokenizer_text_from_dir(const std::string& dir) {
  const fs::path root(dir);
  std::map<std::string, int64_t> vocab;
  std::vector<std::pair<std::string, std::string>> merge_pairs;
  std::vector<std::pair<int64_t, std::string>> added;
  std::string source;
  // Token ids become int32: one outside [0, 2^31) would wrap into another's place.
  auto token_id = [](const JsonValue& value, const std::string& what) {
    const int64_t id = value.as_int(what);
    ND_CHECK_INPUT(id >= 0 && id <= INT32_MAX, what << " " << id << " is outside [0, " << INT32_MAX << "]");
    return id;
  };
  auto read_vocab = [&](const JsonValue& object, const std::string& what) {
    ND_CHECK_INPUT(object.kind == JsonValue::Kind::Object, what << " is no JSON object of token -> id");
    for (const auto& [token, id] : object.members) vocab[token] = token_id(id, what + " id of a token");
  };
  auto add_merge = [&](const std::string& line, const std::string& what) {
    const size_t space = line.find(' ');
    ND_CHECK_INPUT(space != std::string::npos && space > 0 && space + 1 < line.size(),
                   what << ": merge \"" << line.substr(0, 40) << "\" is not \"left right\"");
    merge_pairs.emplace_back(line.substr(0, space), line.substr(space + 1));
  };
  std::error_code ec;
  if (fs::exists(root / "tokenizer.json", ec)) {
    source = (root / "tokenizer.json").string();
    const JsonValue doc = parse_json(read_whole_file(source), source);
    const JsonValue* model = doc.find("model");
    ND_CHECK_INPUT(model && model->find("vocab") && model->find("merges"),
                   source << " has no model.vocab and model.merges (not a BPE tokenizer)");
    const JsonValue* type = model->find("type");
    ND_CHECK_INPUT(type == nullptr || type->kind != JsonValue::Kind::String || type->text == "BPE",
                   source << ": model type " << type->text << ", not BPE");
    read_vocab(*model->find("vocab"), source + " model.vocab");
    for (const JsonValue& m : model->find("merges")->items) {
      if (m.kind == JsonValue::Kind::Array && m.items.size() == 2)
        merge_pairs.emplace_back(m.items[0].as_string(source + " merge"), m.items[1].as_string(source + " merge"));
      else
        add_merge(m.as_string(source + " merge"), source);
    }
    if (const JsonValue* tokens = doc.find("added_tokens"))
      for (const JsonValue& t : tokens->items)
        if (t.find("id") && t.find("content"))
          added.emplace_back(token_id(*t.find("id"), source + " added token id"),
                             t.find("content")->as_string(source + " added token"));
  } else {
    source = (root / "vocab.json").string();
    read_vocab(parse_json(read_whole_file(source), source), source);
    std::istringstream lines(read_whole_file((root / "merges.txt").string()));
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty() || line.rfind("#version", 0) == 0) continue;
      add_merge(line, (root / "merges.txt").string());
    }
  }
  for (const auto& [id, text] : added) vocab[text] = id;

  const std::vector<std::string> chars = byte_characters();
  std::vector<int32_t> byte_ids(256);
  for (int b = 0; b < 256; ++b) {
    auto it = vocab.find(chars[b]);
    ND_CHECK_INPUT(it != vocab.end() && it->second < 256, source << " has no byte token for byte " << b
                                                                 << " among ids 0..255: not a GPT-2-style byte-level BPE");
    byte_ids[b] = static_cast<int32_t>(it->second);
  }
  std::vector<BpeMerge> merges;
  for (size_t i = 0; i < merge_pairs.size(); ++i) {
    const auto& [left, right] = merge_pairs[i];
    auto l = vocab.find(left), r = vocab.find(right), made = vocab.find(left + right);
    const int64_t id = 256 + static_cast<int64_t>(i);
    ND_CHECK_INPUT(l != vocab.end() && r != vocab.end() && made != vocab.end() && made->second == id &&
                       l->second >= 0 && l->second < id && r->second >= 0 && r->second < id,
                   source << ": merge " << i << " (\"" << left << "\" \"" << right << "\") does not make token "
                          << 256 + i << " as GPT-2's layout has it (bytes, then one token per merge in order)");
    merges.push_back({static_cast<int32_t>(l->second), static_cast<int32_t>(r->second)});
  }
  std::vector<std::pair<int32_t, std::string>> specials;
  for (const auto& [token, id] : vocab)
    if (id >= static_cast<int64_t>(256 + merges.size())) specials.emplace_back(static_cast<int32_t>(id), token);
  std::sort(specials.begin(), specials.end());
  ND_CHECK_INPUT(vocab.size() == 256 + merges.size() + specials.size(),
                 source << " holds " << vocab.size() << " tokens, not the 256 bytes, " << merges.size()
                        << " merges and special tokens after them");
  return Gpt2Tokenizer(byte_ids, merges, specials).file_text();
}

}  // namespace nd
