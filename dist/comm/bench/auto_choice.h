// How PeerComm's `auto` all-reduce (dist/comm/peer_comm.h) decides what to run at each size: the
// table PeerOptions::decide returns, from the five choices (one-shot, two-shot, our ring, NCCL,
// push) timed on the comm when it is made. The grid hands auto_decider() to every
// `--collectives auto` group. (The lab decides from tables bench-comm saved: lab/auto_table_file.h.)
#pragma once
#include <cstdint>
#include <functional>
#include <map>

#include "dist/comm/bench/bench_timing.h"
#include "dist/comm/peer_comm.h"

namespace nd::dist {

// PeerOptions::decide: the choices timed on the comm (measure_auto_table). `timing`: graph times
// the GPUs alone (what a captured training step pays), eager adds the host's cost; ring and NCCL
// are timed up to `measure_max_bytes` (0 = the registered buffer, the peer choices' limit), an
// alpha-beta fit extrapolates above (bench-comm passes its --max-bytes, so auto's choice at every
// size it sweeps is measured, not fitted). Collective, as the comm's construction is.
std::function<AutoTable(PeerComm&)> auto_decider(BenchTiming timing = BenchTiming::Eager,
                                                 int64_t measure_max_bytes = 0);

// The five choices timed on `peer` (a PeerComm with peer memory), max over ranks. Collective.
AutoTable measure_auto_table(PeerComm& peer, BenchTiming timing, int64_t measure_max_bytes);

// The decision from per-choice time curves: for each power of two from 8 B to 2^40, the choice
// with the smallest time; `time_us(choice, bytes)` < 0 means unavailable. Merged into runs (the
// last entry covers everything larger).
AutoTable decide_by_size(const std::function<double(Algorithm, int64_t)>& time_us);

// One choice's time per size (us, max over ranks): measured at start or read from a saved sweep.
using AutoCurve = std::map<int64_t, double>;
// The decision from per-choice curves (in kAutoChoices' order). A size between measured ones takes
// the next larger measured size's time; above a curve's last size (ring and NCCL only: the peer
// choices stop at `largest(choice)`) an alpha-beta fit of the curve's upper half extrapolates.
AutoTable decide_from_curves(const AutoCurve (&curves)[kAutoChoiceCount],
                             const std::function<int64_t(Algorithm)>& largest);

}  // namespace nd::dist
