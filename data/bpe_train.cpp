// BPE training with incremental pair counts. Distinct chunks are counted once ("words" with a
// frequency); pair counts live in a hash map, a max-heap of (count, pair) is popped lazily, and
// each merge re-counts only the words that contain the merged pair (found through an index
// pair -> words). Cost per merge is proportional to the words it touches, not to the text.
#include <algorithm>
#include <queue>
#include <unordered_map>

#include "data/bpe_tokenizer.h"
#include "data/pretokenize.h"
#include "tensor/error.h"

namespace nd {
namespace {

struct PairEntry {
  int64_t count;
  uint64_t key;
  // Max-heap order: higher count first; on ties the smaller key (left, then right) first.
  bool operator<(const PairEntry& o) const { return count != o.count ? count < o.count : key > o.key; }
};

class PairStats {
 public:
  void add(uint64_t key, int64_t delta) { pending_[key] += delta; }

  // Applies the pending deltas and queues the changed counts on the heap.
  void flush() {
    for (const auto& [key, delta] : pending_) {
      if (delta == 0) continue;
      int64_t& count = counts_[key];
      count += delta;
      if (count > 0) heap_.push({count, key});
      else counts_.erase(key);
    }
    pending_.clear();
  }

  // The most frequent pair, or false when none is left. Stale heap entries are skipped.
  bool pop_best(uint64_t& key) {
    while (!heap_.empty()) {
      PairEntry top = heap_.top();
      heap_.pop();
      auto it = counts_.find(top.key);
      if (it != counts_.end() && it->second == top.count) {
        key = top.key;
        return true;
      }
    }
    return false;
  }

 private:
  std::unordered_map<uint64_t, int64_t> counts_;
  std::unordered_map<uint64_t, int64_t> pending_;
  std::priority_queue<PairEntry> heap_;
};

struct Word {
  std::vector<int32_t> symbols;
  int64_t frequency;
};

// Replaces every (left, right) in `symbols`, left to right, by `merged`. False if none.
bool merge_pair(std::vector<int32_t>& symbols, int32_t left, int32_t right, int32_t merged) {
  size_t out = 0;
  bool changed = false;
  for (size_t i = 0; i < symbols.size(); ++i) {
    if (i + 1 < symbols.size() && symbols[i] == left && symbols[i + 1] == right) {
      symbols[out++] = merged;
      ++i;
      changed = true;
    } else {
      symbols[out++] = symbols[i];
    }
  }
  symbols.resize(out);
  return changed;
}

}  // namespace

BpeTokenizer BpeTokenizer::train(const std::string& text, int64_t vocab_size, const ProgressFn& progress) {
  ND_CHECK_INPUT(!text.empty(), "cannot train BPE on an empty text");
  ND_CHECK_INPUT(vocab_size >= 256, "BPE vocab size " << vocab_size << " is below 256, the byte tokens it starts from");
  ND_CHECK_INPUT(vocab_size <= (int64_t{1} << 24), "BPE vocab size " << vocab_size << " is too large (max 16777216)");

  std::unordered_map<std::string_view, int64_t> chunk_counts;
  for (std::string_view chunk : split_into_chunks(text)) ++chunk_counts[chunk];
  std::vector<std::pair<std::string_view, int64_t>> distinct(chunk_counts.begin(), chunk_counts.end());
  std::sort(distinct.begin(), distinct.end());  // fixed word order, whatever the hash map's
  std::vector<Word> words;
  words.reserve(distinct.size());
  for (const auto& [chunk, count] : distinct) {
    Word w{std::vector<int32_t>(chunk.size()), count};
    for (size_t i = 0; i < chunk.size(); ++i) w.symbols[i] = static_cast<unsigned char>(chunk[i]);
    words.push_back(std::move(w));
  }

  PairStats stats;
  std::unordered_map<uint64_t, std::vector<int32_t>> words_with_pair;  // may hold stale entries
  for (size_t w = 0; w < words.size(); ++w) {
    const std::vector<int32_t>& s = words[w].symbols;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      uint64_t key = bpe_pair_key(s[i], s[i + 1]);
      stats.add(key, words[w].frequency);
      std::vector<int32_t>& list = words_with_pair[key];
      if (list.empty() || list.back() != static_cast<int32_t>(w)) list.push_back(static_cast<int32_t>(w));
    }
  }
  stats.flush();

  int64_t target = vocab_size - 256;
  int64_t report_every = target / 100 + 1;
  std::vector<BpeMerge> merges;
  uint64_t key = 0;
  while (static_cast<int64_t>(merges.size()) < target && stats.pop_best(key)) {
    int32_t left = static_cast<int32_t>(key >> 32), right = static_cast<int32_t>(key & 0xffffffffu);
    int32_t merged = static_cast<int32_t>(256 + merges.size());
    merges.push_back({left, right});
    std::vector<int32_t> touched = std::move(words_with_pair[key]);
    words_with_pair.erase(key);
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (int32_t w : touched) {
      std::vector<int32_t>& s = words[w].symbols;
      int64_t f = words[w].frequency;
      std::vector<int32_t> before = s;
      if (!merge_pair(s, left, right, merged)) continue;
      for (size_t i = 0; i + 1 < before.size(); ++i) stats.add(bpe_pair_key(before[i], before[i + 1]), -f);
      for (size_t i = 0; i + 1 < s.size(); ++i) {
        uint64_t k = bpe_pair_key(s[i], s[i + 1]);
        stats.add(k, f);
        if (s[i] == merged || s[i + 1] == merged) words_with_pair[k].push_back(w);
      }
    }
    stats.flush();
    if (progress && static_cast<int64_t>(merges.size()) % report_every == 0)
      progress(static_cast<double>(merges.size()) / target);
  }
  if (progress) progress(1.0);
  return BpeTokenizer(std::move(merges));
}

}  // namespace nd
