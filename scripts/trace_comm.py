#!/usr/bin/env python3
"""A traced run's communication per step, defined so that it compares with `nanodist plan`.

From a `nanodist train --trace` Chrome JSON (every rank, the traced steps):
- communication: each collective call (the n-th call on a comm stream of every rank is the same
  call) counted once, for the shortest time any rank saw it take. A rank that arrives early waits
  in the call for the others (skew); the last to arrive sees only the collective's own time, from
  its arrival to the end. Summed over calls, divided by the steps.
- exposed: per rank, the compute stream's idle time under collectives, counted in the gaps between
  compute ops that a collective ends in (the op after such a gap waited for it); a gap that no
  collective ends in is the host launching the next op while a collective runs beside, and is idle
  with or without it. Per step. The figure used is the smallest over ranks: that rank is the one
  the others wait for, so its idle time is what the collectives themselves cost the step; the
  other ranks' extra is their wait for it (load imbalance), which no communication model predicts.
  The per-rank figures are printed too.

Prints one line `communication MS exposed MS` (then the per-rank lines with --verbose).
Standard library only.

usage: scripts/trace_comm.py TRACE.json [--verbose]
"""
import argparse
import bisect
import collections
import json
import sys


END_SLACK_US = 20.0


def merged(intervals):
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def covered(intervals, cover):
    """Length of `intervals` (merged) that `cover` (merged) overlaps."""
    total, j = 0.0, 0
    for a, b in intervals:
        while j < len(cover) and cover[j][1] <= a:
            j += 1
        k = j
        while k < len(cover) and cover[k][0] < b:
            total += min(b, cover[k][1]) - max(a, cover[k][0])
            k += 1
    return total


def measure(events):
    steps = collections.Counter(e["pid"] for e in events if e.get("cat") == "step")
    ranks = sorted(steps)
    if not ranks:
        raise ValueError("no traced step")
    nsteps = steps[ranks[0]]
    calls = collections.defaultdict(lambda: collections.defaultdict(list))  # stream -> rank -> calls
    compute = collections.defaultdict(list)
    for e in events:
        if e.get("ph") != "X" or e.get("cat") == "step":
            continue
        span = [e["ts"], e["ts"] + e["dur"]]
        if e.get("cat") == "comm":
            calls[e["tid"]][e["pid"]].append(span)
        else:
            compute[e["pid"]].append(span)
    communication = 0.0
    for stream, per_rank in calls.items():
        counts = {len(per_rank.get(r, [])) for r in ranks}
        if len(counts) != 1:
            raise ValueError(f"comm stream {stream}: the ranks traced {sorted(counts)} calls")
        ordered = {r: sorted(per_rank[r]) for r in ranks}
        for i in range(counts.pop()):
            communication += min(ordered[r][i][1] - ordered[r][i][0] for r in ranks)
    exposed = {}
    for r in ranks:
        mine = [c for per_rank in calls.values() for c in per_rank.get(r, [])]
        comm, busy = merged(mine), merged(compute[r])
        ends = sorted(b for _, b in mine)
        waited = 0.0
        for (_, g0), (g1, _) in zip(busy, busy[1:]):
            # A gap that a collective ends in: the op after it waited for that collective (whose end,
            # recorded on its own stream, may come a few us after the op's start).
            i = bisect.bisect_right(ends, g0)
            if i < len(ends) and ends[i] <= g1 + END_SLACK_US:
                waited += covered([[g0, g1]], comm)
        exposed[r] = waited / nsteps / 1000
    return communication / nsteps / 1000, exposed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    try:
        with open(args.trace) as f:
            events = json.load(f)["traceEvents"]
        communication, exposed = measure(events)
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"trace_comm.py: {args.trace} is not a readable nanodist trace ({e})")
    print(f"communication {communication:.3f} exposed {min(exposed.values()):.3f}")
    if args.verbose:
        for r, ms in exposed.items():
            print(f"rank {r}: exposed {ms:.3f} ms per step")


if __name__ == "__main__":
    main()
