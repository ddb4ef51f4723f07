// The named corpora prepare can read instead of files ("kjv" from Debian's bible-kjv package,
// "shakespeare" downloaded with curl); files are read by text_stream.h.
#pragma once
#include <string>

namespace nd {

// "kjv": the output of `bible -f "Gen1:1-Rev22:21"` (lines like "Ge1:1 In the beginning ..."),
// kept as printed. "shakespeare": TinyShakespeare from karpathy/char-rnn, via curl.
// nd::Error when the program is missing (with the package to install), offline, or unknown name.
std::string read_named_corpus(const std::string& name);

extern const char* const kTinyShakespeareUrl;

}  // namespace nd
