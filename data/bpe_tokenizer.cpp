// BPE encode/decode and its file ("nanodist-tokenizer bpe", "vocab_size N", "merges M", then
// one line per merge: new id, left id, right id, the merged bytes escaped for humans).
#include "data/bpe_tokenizer.h"

#include <queue>
#include <sstream>

#include "data/atomic_file.h"
#include "data/pretokenize.h"
#include "tensor/error.h"

namespace nd {

BpeTokenizer::BpeTokenizer(std::vector<BpeMerge> merges) : merges_(std::move(merges)) {
  // Merges come from files: each may double a token's length, so 40 lines could ask for 2^40
  // bytes. The lengths are summed first and capped far above any real vocabulary.
  std::vector<int64_t> length(256 + merges_.size(), 1);
  int64_t total = 256;
  for (size_t i = 0; i < merges_.size(); ++i) {
    int32_t id = static_cast<int32_t>(256 + i);
    const BpeMerge& m = merges_[i];
    ND_CHECK_INPUT(m.left >= 0 && m.left < id && m.right >= 0 && m.right < id,
                   "BPE merge " << i << " (" << m.left << ", " << m.right << ") must join ids below " << id);
    bool inserted = rank_of_pair_.emplace(bpe_pair_key(m.left, m.right), static_cast<int32_t>(i)).second;
    ND_CHECK_INPUT(inserted, "BPE merge " << i << " (" << m.left << ", " << m.right << ") appears twice");
    length[id] = length[m.left] + length[m.right];
    total += length[id];
    ND_CHECK_INPUT(length[id] <= kMaxBpeVocabularyBytes && total <= kMaxBpeVocabularyBytes,
                   "BPE merge " << i << " makes the vocabulary's tokens longer than " << kMaxBpeVocabularyBytes
                                << " bytes in all (GPT-2's spell out well under 1 MiB): not a real tokenizer");
  }
  token_bytes_.reserve(256 + merges_.size());
  for (int b = 0; b < 256; ++b) token_bytes_.push_back(std::string(1, static_cast<char>(b)));
  for (const BpeMerge& m : merges_) token_bytes_.push_back(token_bytes_[m.left] + token_bytes_[m.right]);
}

// Symbols form a linked list; a min-heap of candidate pairs ordered by (rank, position) is
// popped lazily (entries whose symbols changed are skipped). A merge only creates pairs of
// higher rank, so this equals applying the merges one by one, each left to right.
std::vector<int32_t> BpeTokenizer::encode_chunk(std::string_view chunk) const {
  size_t n = chunk.size();
  std::vector<int32_t> id(n);
  std::vector<int64_t> prev(n), next(n);
  for (size_t i = 0; i < n; ++i) {
    id[i] = static_cast<unsigned char>(chunk[i]);
    prev[i] = static_cast<int64_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int64_t>(i + 1) : -1;
  }
  struct Candidate {
    int32_t rank;
    int64_t pos;
    int32_t left, right;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  auto consider = [&](int64_t pos) {
    if (pos < 0 || next[pos] < 0) return;
    auto it = rank_of_pair_.find(bpe_pair_key(id[pos], id[next[pos]]));
    if (it != rank_of_pair_.end()) heap.push({it->second, pos, id[pos], id[next[pos]]});
  };
  for (size_t i = 0; i + 1 < n; ++i) consider(static_cast<int64_t>(i));
  std::vector<bool> alive(n, true);
  while (!heap.empty()) {
    Candidate c = heap.top();
    heap.pop();
    int64_t right_pos = next[c.pos];
    if (!alive[c.pos] || right_pos < 0 || id[c.pos] != c.left || id[right_pos] != c.right) continue;
    id[c.pos] = 256 + c.rank;
    alive[right_pos] = false;
    next[c.pos] = next[right_pos];
    if (next[c.pos] >= 0) prev[next[c.pos]] = c.pos;
    consider(prev[c.pos]);
    consider(c.pos);
  }
  std::vector<int32_t> out;
  for (int64_t i = n > 0 ? 0 : -1; i >= 0; i = next[i]) out.push_back(id[i]);
  return out;
}

std::vector<int32_t> BpeTokenizer::encode(const std::string& text, const ProgressFn& progress) const {
  std::vector<std::string_view> chunks = split_into_chunks(text);
  // Most chunks repeat (common words), so each distinct chunk is encoded once.
  std::unordered_map<std::string_view, std::vector<int32_t>> cache;
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3);
  size_t report_every = chunks.size() / 100 + 1;
  for (size_t i = 0; i < chunks.size(); ++i) {
    auto it = cache.find(chunks[i]);
    if (it == cache.end()) it = cache.emplace(chunks[i], encode_chunk(chunks[i])).first;
    ids.insert(ids.end(), it->second.begin(), it->second.end());
    if (progress && i % report_every == 0) progress(static_cast<double>(i) / chunks.size());
  }
  if (progress) progress(1.0);
  return ids;
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    ND_CHECK(ids[i] >= 0 && ids[i] < vocab_size(),
             "token " << ids[i] << " at position " << i << " is outside the BPE vocabulary of size " << vocab_size());
    text += token_bytes_[static_cast<size_t>(ids[i])];
  }
  return text;
}

void BpeTokenizer::save(const std::string& path) const {
  std::ostringstream out;
  out << kTokenizerFileTag << " bpe\n";
  out << "vocab_size " << vocab_size() << "\n";
  out << "merges " << merges_.size() << "\n";
  out << "# new_id left right \"merged bytes\" (ids 0..255 are the bytes themselves)\n";
  for (size_t i = 0; i < merges_.size(); ++i)
    out << 256 + i << " " << merges_[i].left << " " << merges_[i].right << " \""
        << escape_bytes(token_bytes_[256 + i]) << "\"\n";
  write_file_atomically(path, out.str());
}

BpeTokenizer BpeTokenizer::parse(const std::string& file_text, const std::string& path) {
  std::istringstream lines(file_text);
  std::string line;
  std::getline(lines, line);  // the tag line, already checked by Tokenizer::load
  int64_t vocab_size = -1, merge_count = -1;
  std::vector<BpeMerge> merges;
  int line_number = 1;
  while (std::getline(lines, line)) {
    ++line_number;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string where = path + ":" + std::to_string(line_number);
    if (vocab_size < 0 || merge_count < 0) {
      std::string key;
      int64_t value = -1;
      ND_CHECK_INPUT((fields >> key >> value) && value >= 0, where << ": expected \"vocab_size N\" or \"merges M\"");
      if (key == "vocab_size") vocab_size = value;
      else if (key == "merges") merge_count = value;
      else ND_FAIL_INPUT(where << ": unknown key \"" << escape_bytes(key) << "\"");
      continue;
    }
    int64_t id = -1, left = -1, right = -1;
    ND_CHECK_INPUT(fields >> id >> left >> right, where << ": expected \"new_id left right\"");
    int64_t expected = 256 + static_cast<int64_t>(merges.size());
    ND_CHECK_INPUT(id == expected, where << ": merge id " << id << ", expected " << expected);
    ND_CHECK_INPUT(left >= 0 && left < id && right >= 0 && right < id,
                   where << ": merge (" << left << ", " << right << ") must join ids below " << id);
    merges.push_back({static_cast<int32_t>(left), static_cast<int32_t>(right)});
  }
  ND_CHECK_INPUT(vocab_size >= 0 && merge_count >= 0, path << ": missing the vocab_size or merges line");
  ND_CHECK_INPUT(static_cast<int64_t>(merges.size()) == merge_count,
                 path << ": " << merges.size() << " merges listed but the header says " << merge_count
                      << " (truncated?)");
  ND_CHECK_INPUT(vocab_size == 256 + merge_count,
                 path << ": vocab_size " << vocab_size << " != 256 + " << merge_count << " merges");
  return BpeTokenizer(std::move(merges));
}

}  // namespace nd
