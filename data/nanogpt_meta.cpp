// A pickle reader for plain dicts of ints and strings: a stack machine over the opcodes below,
// with the memo (dicts are shared by reference, so items set after MEMOIZE reach both). Strings
// are shared too, so a memo read many times costs no copies, and dicts nest two deep at most
// (meta.pkl's dict of dicts), so no file can build a cycle or a chain deep enough to matter.
#include "data/nanogpt_meta.h"

#include <climits>
#include <map>
#include <memory>
#include <utility>

#include "data/char_tokenizer.h"
#include "data/atomic_file.h"
#include "tensor/error.h"

namespace nd {
namespace {

struct Dict;

struct Value {
  enum class Kind { None, Bool, Int, Str, Dict, Mark } kind = Kind::None;
  int64_t number = 0;
  std::shared_ptr<const std::string> text;  // Str
  std::shared_ptr<Dict> dict;              // Dict
};

struct Dict {
  std::vector<std::pair<Value, Value>> items;
  bool holds_dict = false;  // one of its values is a dict
  bool nested = false;      // it is a value of another dict
};

Value make(Value::Kind kind, int64_t number = 0) {
  Value v;
  v.kind = kind;
  v.number = number;
  return v;
}

class PickleReader {
 public:
  PickleReader(const std::string& bytes, const std::string& path) : b_(bytes), path_(path) {}

  Value run() {
    while (true) {
      ND_CHECK_INPUT(at_ < b_.size(), path_ << " ends before the pickle's STOP");
      const size_t where = at_;
      const unsigned char op = static_cast<unsigned char>(b_[at_++]);
      switch (op) {
        case 0x80: take(1); break;          // PROTO
        case 0x95: take(8); break;          // FRAME (a length hint)
        case '}': push_dict(); break;       // EMPTY_DICT
        case '(': push(make(Value::Kind::Mark)); break;
        case 'N': push(make(Value::Kind::None)); break;
        case 0x88: push(make(Value::Kind::Bool, 1)); break;  // NEWTRUE
        case 0x89: push(make(Value::Kind::Bool, 0)); break;  // NEWFALSE
        case 'K': push_int(static_cast<int64_t>(unsigned_le(1))); break;
        case 'M': push_int(static_cast<int64_t>(unsigned_le(2))); break;
        case 'J': push_int(static_cast<int32_t>(unsigned_le(4))); break;
        case 0x8a: push_int(long1()); break;              // LONG1
        case 0x8c: push_str(unsigned_le(1)); break;       // SHORT_BINUNICODE
        case 'X': push_str(unsigned_le(4)); break;        // BINUNICODE
        case 0x8d: push_str(unsigned_le(8)); break;       // BINUNICODE8
        case 0x94: memo_[memo_.size()] = top(); break;    // MEMOIZE
        case 'q': memo_[unsigned_le(1)] = top(); break;   // BINPUT
        case 'r': memo_[unsigned_le(4)] = top(); break;   // LONG_BINPUT
        case 'h': push(memo_at(unsigned_le(1))); break;   // BINGET
        case 'j': push(memo_at(unsigned_le(4))); break;   // LONG_BINGET
        case 's': set_items(stack_.size() - 2); break;    // SETITEM
        case 'u': set_items(mark()); break;               // SETITEMS
        case '.':                                          // STOP
          ND_CHECK_INPUT(stack_.size() == 1, path_ << ": the pickle ends with " << stack_.size() << " values, not 1");
          return stack_.back();
        default:
          ND_FAIL_INPUT(path_ << ": pickle opcode 0x" << std::hex << int(op) << std::dec << " at byte " << where
                              << " is not one a plain dict of numbers and strings is written with; nanodist "
                              << "reads only the meta.pkl nanoGPT's prepare.py writes");
      }
    }
  }

 private:
  const char* take(size_t n) {
    ND_CHECK_INPUT(n <= b_.size() - at_, path_ << " is cut off inside the pickle (byte " << at_ << ")");
    const char* p = b_.data() + at_;
    at_ += n;
    return p;
  }
  uint64_t unsigned_le(size_t n) {
    const char* p = take(n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
    return v;
  }
  int64_t long1() {
    const size_t n = unsigned_le(1);
    ND_CHECK_INPUT(n <= 8, path_ << ": an integer of " << n << " bytes is too large for a vocabulary");
    if (n == 0) return 0;
    uint64_t v = unsigned_le(n);
    if (n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);  // sign extension
    return static_cast<int64_t>(v);
  }
  void push(Value v) { stack_.push_back(std::move(v)); }
  void push_int(int64_t n) { push(make(Value::Kind::Int, n)); }
  void push_str(uint64_t n) {
    Value v = make(Value::Kind::Str);
    v.text = std::make_shared<const std::string>(take(n), n);
    push(std::move(v));
  }
  void push_dict() {
    Value v = make(Value::Kind::Dict);
    v.dict = std::make_shared<Dict>();
    push(std::move(v));
  }
  const Value& top() const {
    ND_CHECK_INPUT(!stack_.empty(), path_ << ": the pickle memoizes from an empty stack");
    return stack_.back();
  }
  Value memo_at(uint64_t key) const {
    auto it = memo_.find(key);
    ND_CHECK_INPUT(it != memo_.end(), path_ << ": the pickle reads memo " << key << ", never stored");
    return it->second;
  }
  size_t mark() const {
    for (size_t i = stack_.size(); i-- > 0;)
      if (stack_[i].kind == Value::Kind::Mark) return i + 1;
    ND_FAIL_INPUT(path_ << ": the pickle sets items without a MARK");
  }
  // Pairs stack_[first ..] into the dict below them; pops the pairs (and a mark just below them).
  void set_items(size_t first) {
    ND_CHECK_INPUT(first >= 1 && first <= stack_.size() && (stack_.size() - first) % 2 == 0,
                   path_ << ": the pickle sets items from an odd or empty stack");
    const bool marked = stack_[first - 1].kind == Value::Kind::Mark;
    const size_t dict_at = marked ? first - 2 : first - 1;
    ND_CHECK_INPUT(first >= (marked ? 2u : 1u) && stack_[dict_at].kind == Value::Kind::Dict,
                   path_ << ": the pickle sets items on something that is not a dict");
    Dict& target = *stack_[dict_at].dict;
    for (size_t i = first; i < stack_.size(); i += 2) {
      const Value& key = stack_[i];
      const Value& value = stack_[i + 1];
      ND_CHECK_INPUT(key.kind != Value::Kind::Dict && key.kind != Value::Kind::Mark &&
                         value.kind != Value::Kind::Mark,
                     path_ << ": the pickle uses a dict or a mark as a dict key or value");
      if (value.kind == Value::Kind::Dict) {
        Dict& inner = *value.dict;
        ND_CHECK_INPUT(&inner != &target && !inner.holds_dict && !target.nested,
                       path_ << ": the pickle nests dicts deeper than meta.pkl's two levels");
        inner.nested = true;
        target.holds_dict = true;
      }
      target.items.emplace_back(key, value);
    }
    stack_.resize(dict_at + 1);
  }

  const std::string& b_;
  const std::string& path_;
  size_t at_ = 0;
  std::vector<Value> stack_;
  std::map<uint64_t, Value> memo_;
};

const Value* find_key(const Value& dict, const std::string& key) {
  for (const auto& [k, v] : dict.dict->items)
    if (k.kind == Value::Kind::Str && *k.text == key) return &v;
  return nullptr;
}

}  // namespace

NanoGptMeta read_nanogpt_meta(const std::string& path) {
  const std::string bytes = read_whole_file(path);
  const Value root = PickleReader(bytes, path).run();
  ND_CHECK_INPUT(root.kind == Value::Kind::Dict, path << " does not hold a dict (nanoGPT's meta.pkl does)");
  const Value* vocab = find_key(root, "vocab_size");
  ND_CHECK_INPUT(vocab && vocab->kind == Value::Kind::Int && vocab->number > 0 && vocab->number <= INT32_MAX,
                 path << " has no vocab_size in [1, " << INT32_MAX << "]");
  NanoGptMeta meta;
  meta.vocab_size = vocab->number;
  const Value* itos = find_key(root, "itos");
  if (itos == nullptr) return meta;
  ND_CHECK_INPUT(itos->kind == Value::Kind::Dict && static_cast<int64_t>(itos->dict->items.size()) == meta.vocab_size,
                 path << ": itos is not a dict of vocab_size (" << meta.vocab_size << ") entries");
  meta.itos.assign(static_cast<size_t>(meta.vocab_size), std::string());
  std::vector<bool> seen(meta.itos.size(), false);
  for (const auto& [id, text] : itos->dict->items) {
    ND_CHECK_INPUT(id.kind == Value::Kind::Int && text.kind == Value::Kind::Str && id.number >= 0 &&
                       id.number < meta.vocab_size && !seen[static_cast<size_t>(id.number)],
                   path << ": itos maps something other than each id 0 .. " << meta.vocab_size - 1
                        << " once to a string");
    seen[static_cast<size_t>(id.number)] = true;
    meta.itos[static_cast<size_t>(id.number)] = *text.text;
  }
  return meta;
}

std::string char_tokenizer_text_from_meta(const NanoGptMeta& meta) {
  std::vector<unsigned char> symbols;
  for (const std::string& ch : meta.itos) {
    // One byte below 0x80 is one UTF-8 character; the char tokenizer keeps its symbols sorted.
    if (ch.size() != 1 || static_cast<unsigned char>(ch[0]) >= 0x80) return "";
    if (!symbols.empty() && static_cast<unsigned char>(ch[0]) <= symbols.back()) return "";
    symbols.push_back(static_cast<unsigned char>(ch[0]));
  }
  if (symbols.empty()) return "";
  return CharTokenizer(std::move(symbols)).to_text();
}

}  // namespace nd
