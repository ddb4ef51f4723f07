// The experiment subcommands of the nanodist binary, `ablate` and `sweep`. Like train's, each
// takes argv starting at the subcommand's name, owns stdout, returns the exit status and lets
// nd::Error escape for main() to report.
#pragma once

namespace nd::experiments {

int run_ablate_command(int argc, const char* const* argv);
int run_sweep_command(int argc, const char* const* argv);

}  // namespace nd::experiments
