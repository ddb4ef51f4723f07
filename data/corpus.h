// Where prepare's text comes from: text files, or a named corpus ("kjv" from Debian's
// bible-kjv package, "shakespeare" downloaded with curl).
#pragma once
#include <string>
#include <vector>

namespace nd {

// The files' bytes, concatenated in order, unchanged. nd::Error naming a missing file.
std::string read_text_files(const std::vector<std::string>& paths);

// "kjv": the output of `bible -f "Gen1:1-Rev22:21"` (lines like "Ge1:1 In the beginning ..."),
// kept as printed. "shakespeare": TinyShakespeare from karpathy/char-rnn, via curl.
// nd::Error when the program is missing (with the package to install), offline, or unknown name.
std::string read_named_corpus(const std::string& name);

extern const char* const kTinyShakespeareUrl;

}  // namespace nd
