// nanoGPT's meta.pkl as Python's pickle writes it (protocols 2 to 5, written here by python3 the
// way nanoGPT's shakespeare_char/prepare.py does): the reader recovers vocab_size and itos, the
// data directory gets the char tokenizer so its tokens decode to the text Python encoded, and
// pickles that are not plain dicts (a class, a call) are refused. Skips where python3 is missing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "data/nanogpt_meta.h"
#include "data/token_dataset.h"
#include "data/tokenizer.h"
#include "tensor/error.h"
#include "tests/data/temp_dir.h"

namespace nd {
namespace {

bool have_python() { return std::system("python3 -c pass > /dev/null 2>&1") == 0; }

// Runs a Python program in `dir` (as the working directory); fails the test when it fails.
void run_python(const TempDir& dir, const std::string& program) {
  write_bytes(dir.file("make.py"), program);
  const std::string command = "cd '" + dir.path.string() + "' && python3 make.py > py.log 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << read_bytes(dir.file("py.log"));
}

// nanoGPT's prepare.py, minus numpy: the sorted characters, stoi/itos, the ids as raw uint16.
std::string nanogpt_prepare(const std::string& text_literal, int protocol) {
  return "import pickle, array\n"
         "data = " + text_literal + "\n"
         "chars = sorted(list(set(data)))\n"
         "stoi = {ch: i for i, ch in enumerate(chars)}\n"
         "itos = {i: ch for i, ch in enumerate(chars)}\n"
         "ids = [stoi[c] for c in data]\n"
         "n = int(0.9 * len(ids))\n"
         "array.array('H', ids[:n]).tofile(open('train.bin', 'wb'))\n"
         "array.array('H', ids[n:]).tofile(open('val.bin', 'wb'))\n"
         "meta = {'vocab_size': len(chars), 'itos': itos, 'stoi': stoi}\n"
         "pickle.dump(meta, open('meta.pkl', 'wb'), protocol=" + std::to_string(protocol) + ")\n"
         "open('text.txt', 'w').write(data)\n";
}

TEST(NanoGptMeta, EveryProtocolGivesTheVocabularyAndTheTextBack) {
  if (!have_python()) GTEST_SKIP() << "python3 is not installed";
  for (int protocol : {2, 3, 4, 5}) {
    SCOPED_TRACE("protocol " + std::to_string(protocol));
    TempDir dir;
    run_python(dir, nanogpt_prepare("'First Citizen:\\nBefore we proceed any further, hear me speak.\\n' * 40", protocol));
    const std::string text = read_bytes(dir.file("text.txt"));
    NanoGptMeta meta = read_nanogpt_meta(dir.file("meta.pkl"));
    ASSERT_EQ(meta.vocab_size, static_cast<int64_t>(meta.itos.size()));
    std::string distinct;  // the sorted set of the text's bytes, computed here
    for (int c = 0; c < 256; ++c)
      if (text.find(static_cast<char>(c)) != std::string::npos) distinct += static_cast<char>(c);
    ASSERT_EQ(meta.vocab_size, static_cast<int64_t>(distinct.size()));
    for (size_t i = 0; i < distinct.size(); ++i) EXPECT_EQ(meta.itos[i], std::string(1, distinct[i]));

    TokenDataset data = open_token_dataset(dir.path.string());  // no --vocab-size: meta.pkl's
    EXPECT_EQ(data.vocab_size, meta.vocab_size);
    ASSERT_FALSE(data.tokenizer_text.empty()) << data.format;
    auto tokenizer = Tokenizer::from_text(data.tokenizer_text, "meta.pkl");
    std::vector<int32_t> ids;
    for (int64_t i = 0; i < data.train->size(); ++i) ids.push_back((*data.train)[i]);
    for (int64_t i = 0; i < data.val->size(); ++i) ids.push_back((*data.val)[i]);
    EXPECT_EQ(tokenizer->decode(ids), text);
    EXPECT_EQ(tokenizer->encode(text), ids);
  }
}

TEST(NanoGptMeta, AVocabSizeThatDisagreesIsOneError) {
  if (!have_python()) GTEST_SKIP() << "python3 is not installed";
  TempDir dir;
  run_python(dir, nanogpt_prepare("'abcabc' * 10", 4));
  try {
    open_token_dataset(dir.path.string(), 50257);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("disagrees with"), std::string::npos) << e.what();
  }
  EXPECT_EQ(open_token_dataset(dir.path.string(), 3).vocab_size, 3);
}

TEST(NanoGptMeta, CharactersBeyondAsciiKeepTheVocabularyWithoutATokenizer) {
  if (!have_python()) GTEST_SKIP() << "python3 is not installed";
  TempDir dir;
  run_python(dir, nanogpt_prepare("'na\\u00efve caf\\u00e9 ' * 10", 4));
  TokenDataset data = open_token_dataset(dir.path.string());
  EXPECT_EQ(data.vocab_size, read_nanogpt_meta(dir.file("meta.pkl")).vocab_size);
  EXPECT_TRUE(data.tokenizer_text.empty());
  EXPECT_NE(data.format.find("beyond ASCII"), std::string::npos) << data.format;
}

TEST(NanoGptMeta, PicklesThatAreNotPlainDictsAreRefused) {
  if (!have_python()) GTEST_SKIP() << "python3 is not installed";
  TempDir dir;
  // A class instance (GLOBAL/STACK_GLOBAL and REDUCE: what a malicious pickle runs), a list, a cut file.
  run_python(dir,
             "import pickle, collections\n"
             "pickle.dump(collections.OrderedDict(vocab_size=3), open('class.pkl', 'wb'), protocol=4)\n"
             "pickle.dump([1, 2, 3], open('list.pkl', 'wb'), protocol=4)\n"
             "b = pickle.dumps({'vocab_size': 3, 'itos': {0: 'a', 1: 'b', 2: 'c'}}, protocol=4)\n"
             "open('cut.pkl', 'wb').write(b[:len(b) // 2])\n"
             "pickle.dump({'itos': {0: 'a'}}, open('novocab.pkl', 'wb'), protocol=4)\n");
  for (const char* name : {"class.pkl", "list.pkl", "cut.pkl", "novocab.pkl"}) {
    SCOPED_TRACE(name);
    try {
      read_nanogpt_meta(dir.file(name));
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(name), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace nd
