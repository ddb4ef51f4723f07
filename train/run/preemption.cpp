// Signal handlers that only touch lock-free atomics (async-signal-safe), and re-raise on the second.
#include "train/run/preemption.h"

#include <signal.h>

#include <atomic>

namespace nd::train {
namespace {

constexpr int kSignals[] = {SIGTERM, SIGINT, SIGUSR1};
std::atomic<int> g_first_signal{0};
std::atomic<int> g_count{0};
struct sigaction g_previous[3];
bool g_ignoring = false;

void on_signal(int sig) {
  if (g_count.fetch_add(1) >= 1) {
    ::signal(sig, SIG_DFL);  // the second signal: no more waiting for a step to end
    ::raise(sig);
    return;
  }
  g_first_signal.store(sig);
}

void install(struct sigaction* previous) {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // a write or a collective in progress goes on
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &action, previous ? &previous[i] : nullptr);
}

}  // namespace

PreemptionSignals::PreemptionSignals() {
  g_first_signal.store(0);
  g_count.store(0);
  g_ignoring = false;
  install(g_previous);
}

void PreemptionSignals::reinstall() {
  if (!g_ignoring) install(nullptr);
}

PreemptionSignals::~PreemptionSignals() {
  if (g_ignoring) return;
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &g_previous[i], nullptr);
}

void PreemptionSignals::ignore_from_now() {
  g_ignoring = true;
  for (int sig : kSignals) ::signal(sig, SIG_IGN);
}

bool PreemptionSignals::requested() const { return g_first_signal.load() != 0; }
int PreemptionSignals::signal() const { return g_first_signal.load(); }

const char* signal_name(int sig) {
  switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
    default: return "a signal";
  }
}

}  // namespace nd::train
