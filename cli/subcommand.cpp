// The command table and the dispatcher every command goes through.
#include "cli/subcommand.h"

#include <cstring>
#include <iostream>

#include "cli/threads.h"
#include "cli/version.h"
#include "tensor/error.h"

namespace nd::cli {

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> table = {
      prepare_command(), train_command(), eval_command(), sample_command(), ablate_command(),
      sweep_command(),   bench_comm_command(), watch_command(), plan_command(),
  };
  return table;
}

std::string commands_help() {
  std::string out =
      "usage: nanodist <command> [flags]   (nanodist <command> --help lists its flags)\n"
      "\n"
      "commands:\n";
  for (const Subcommand& c : subcommands()) {
    std::string name = std::string("  ") + c.name;
    if (name.size() < 17) name.resize(17, ' ');
    out += name + c.summary + "\n";
  }
  out +=
      "\n"
      "Errors print one line; --verbose or NANODIST_VERBOSE=1 adds the failing check and file:line.\n"
      "nanodist --version prints the version, the commit and the build's options.\n"
      "\n"
      "Exit status: 0 done; 1 an error (one line, printed once under mpirun); 3 train diverged (a\n"
      "non-finite loss or gradient with no --skip-nonfinite left: a retry would diverge again); 75 stopped\n"
      "by a signal after saving a checkpoint (requeue the job with --resume). ablate and sweep pass on 75.\n"
      "A saved stop also leaves OUT/stopped_by_signal: mpirun signalled itself (Ctrl-C) exits 1, not 75.\n";
  return out;
}

int run_command_line(int argc, const char* const* argv) {
  int first = 1;
  while (first < argc && std::strcmp(argv[first], "--verbose") == 0) ++first;  // main() already read it
  if (first >= argc || std::strcmp(argv[first], "--help") == 0 || std::strcmp(argv[first], "-h") == 0 ||
      std::strcmp(argv[first], "help") == 0) {
    std::cout << commands_help();
    return first >= argc ? 1 : 0;
  }
  if (std::strcmp(argv[first], "--version") == 0 || std::strcmp(argv[first], "version") == 0) {
    std::cout << version_text();
    return 0;
  }
  const std::string name = argv[first];
  std::string names;
  for (const Subcommand& c : subcommands()) {
    if (name != c.name) {
      names += (names.empty() ? "" : ", ") + std::string(c.name);
      continue;
    }
    FlagSet set = c.flags();
    ParsedFlags flags = set.parse(argc - first, argv + first);  // argv[first] is the command
    if (flags.help_requested) {
      std::cout << set.help();
      return 0;
    }
    apply_thread_count(flags.threads);
    return c.run(flags);
  }
  ND_CHECK_INPUT(name != "bench-kernels", "bench-kernels is the lab's now: nanodist-lab bench-kernels (a build configured "
                                          "with -DNANODIST_LAB=ON); nanodist train --op-times times the ops of a run");
  ND_FAIL_INPUT("unknown command '" << name << "' (commands: " << names << "; see nanodist --help)");
}

}  // namespace nd::cli
