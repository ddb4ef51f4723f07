// The subcommands of the nanodist binary as one table. Each entry names a command, says in one
// line what it does, declares its flags and runs on the parsed flags; run_command_line picks the
// entry, parses argv with its FlagSet, answers --help the same way for every command, and hands
// the same ParsedFlags to every run. Adding a command (eval, ablate, sweep) is one file defining
// `Subcommand <name>_command()` and one line in subcommands() (cli/subcommand.cpp).
#pragma once
#include <string>
#include <vector>

#include "cli/flags.h"

namespace nd::cli {

struct Subcommand {
  const char* name;     // "bench-comm"
  const char* summary;  // one line in `nanodist --help`
  FlagSet (*flags)();   // its flag table; `nanodist <name> --help` prints flags().help()
  // The work: owns stdout, returns the exit status, lets nd::Error escape for main() to print.
  int (*run)(const ParsedFlags& flags);
};

Subcommand prepare_command();
Subcommand train_command();
Subcommand sample_command();
Subcommand eval_command();
Subcommand ablate_command();
Subcommand sweep_command();
Subcommand bench_comm_command();
Subcommand watch_command();
Subcommand plan_command();

// Every command, in the order `nanodist --help` lists them.
const std::vector<Subcommand>& subcommands();

// `nanodist --help`: usage and one line per command.
std::string commands_help();

// The whole command line as main() gets it (argv[0] is the binary): dispatches to a command and
// returns its exit status. No command (1) or --help (0) prints commands_help(); an unknown
// command is an input error.
int run_command_line(int argc, const char* const* argv);

}  // namespace nd::cli
