// `nanodist watch --out OUT`: follows OUT's metrics.jsonl (one run, or every run of an ablate or
// sweep OUT) and redraws the latest values and their sparklines every --interval seconds, until
// Ctrl-C (or SIGTERM), or once with --once. Reads only; a run that is writing is never disturbed.
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <thread>

#include "cli/subcommand.h"
#include "experiments/run_watch.h"
#include "tensor/error.h"

namespace nd::cli {
namespace {

volatile sig_atomic_t stop_requested = 0;

void request_stop(int) { stop_requested = 1; }

int terminal_width() {
  winsize w{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
  return 100;
}

FlagSet watch_flags() {
  FlagSet set("watch", "--out DIR [--once] [--interval 2]");
  set.add(flag("out", "", "a run's --out, or an ablate/sweep --out (every run below it) (required)"))
      .add(flag("once", "false", "draw once and exit", FlagType::Bool))
      .add(flag("interval", "2", "seconds between redraws", FlagType::Float));
  return set;
}

int run_watch(const ParsedFlags& flags) {
  ND_CHECK_INPUT(flags.has("out"), "--out DIR is required (a run's or an experiment's output directory)");
  const std::string dir = flags.get_string("out");
  const double interval = flags.get_double("interval");
  ND_CHECK_INPUT(interval > 0, "--interval must be > 0 seconds, got " << interval);
  if (flags.get_bool("once")) {
    std::cout << experiments::render_watch(dir, terminal_width()) << std::flush;
    return 0;
  }
  struct sigaction action {};
  action.sa_handler = request_stop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  const bool tty = isatty(STDOUT_FILENO);
  while (!stop_requested) {
    const std::string view = experiments::render_watch(dir, terminal_width());
    // On a terminal the view replaces the last one (cursor home, clear); piped, frames follow.
    std::cout << (tty ? "\x1b[H\x1b[2J" : "\n") << view << "(Ctrl-C to stop)" << std::endl;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(interval);
    while (!stop_requested && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::cout << std::endl;
  return 0;
}

}  // namespace

Subcommand watch_command() {
  return {"watch", "follow the metrics of a run, or of every run of an ablation or sweep, as they are written",
          watch_flags, run_watch};
}

}  // namespace nd::cli
