// What nanoGPT and llm.c users type that nanodist does differently: a whole sentence saying what
// to do instead, where "did you mean --x" would not help (--compile has no equivalent flag,
// --eval_only is another command, llm.c's -b is --batch-size, --init-from resume is --resume).
#pragma once
#include <string>

namespace nd::cli {

class FlagSet;

// The hint for `arg` (as typed: "--eval_only", "-b") that `set` does not know, or "" when it is
// no idiom of theirs. A hint that names a flag is given only where `set` has that flag.
std::string flag_idiom(const std::string& arg, const FlagSet& set);

// The hint for a value of a known flag that means something else there ("--init-from resume"),
// or "" when it is none.
std::string value_idiom(const std::string& flag, const std::string& value);

}  // namespace nd::cli
