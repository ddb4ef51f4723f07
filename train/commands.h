// The subcommands of the nanodist binary. Each takes argv starting at the subcommand's name,
// owns stdout for its output, returns the exit status, and lets nd::Error escape for main() to
// report as one `nanodist: error:` line.
#pragma once

namespace nd::train {

int run_prepare_command(int argc, const char* const* argv);
int run_train_command(int argc, const char* const* argv);
int run_sample_command(int argc, const char* const* argv);

// `nanodist --help`: the subcommands, one line each.
const char* subcommands_help();

}  // namespace nd::train
