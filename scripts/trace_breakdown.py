#!/usr/bin/env python3
"""Where a traced step's time goes, from a `nanodist train --trace` Chrome JSON (one rank).

Prints, for the first traced step of the rank: the time per op name on each stream (compute
and comm, shapes kept), and the compute stream's gaps grouped by the op that ended each gap and
the collective running during it (a gap under a collective is exposed communication; one under
none is host launch time or idle). Standard library only.

usage: scripts/trace_breakdown.py TRACE.json [--rank 0] [--top 40]
"""
import argparse
import collections
import json
import re
import sys


def load_step(path, rank):
    try:
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"trace_breakdown.py: {path} is not a readable nanodist trace ({e})")
    steps = [e for e in events if e.get("cat") == "step" and e.get("pid") == rank]
    if not steps:
        sys.exit(f"trace_breakdown.py: no step of rank {rank} in {path}")
    step = min(steps, key=lambda e: e["ts"])
    begin, end = step["ts"], step["ts"] + step["dur"]
    spans = [e for e in events if e.get("ph") == "X" and e.get("pid") == rank and e.get("cat") != "step"
             and begin <= e["ts"] < end]
    names = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name" and e.get("pid") == rank}
    return step, spans, names


def shape_free(name):
    """An op or collective name without its shape or size, so that the gaps group by kind."""
    return re.sub(r" [\d.]+ MB", "", re.sub(r"\[.*?\]", "[]", name))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    step, spans, names = load_step(args.trace, args.rank)
    begin, end = step["ts"], step["ts"] + step["dur"]
    print(f"{step['name']} of rank {args.rank}: {step['dur'] / 1000:.2f} ms")

    per_op = collections.defaultdict(lambda: [0, 0.0])
    for e in spans:
        key = (names.get(e["tid"], str(e["tid"])), e["name"])
        per_op[key][0] += 1
        per_op[key][1] += e["dur"]
    totals = collections.defaultdict(float)
    for (stream, _), (_, us) in per_op.items():
        totals[stream] += us
    print("busy per stream: " + ", ".join(f"{s} {us / 1000:.2f} ms" for s, us in totals.items()))
    print(f"\n{'stream':16s} {'op':64s} {'calls':>6s} {'ms':>8s} {'us/call':>9s}")
    for (stream, name), (n, us) in sorted(per_op.items(), key=lambda kv: -kv[1][1])[:args.top]:
        print(f"{stream[:16]:16s} {name[:64]:64s} {n:6d} {us / 1000:8.2f} {us / n:9.1f}")

    # Gaps on the compute stream (tid 0), each named by the op that ends it and the last
    # collective that overlaps it.
    compute = sorted((e for e in spans if e["tid"] == 0), key=lambda e: e["ts"])
    comm = sorted((e for e in spans if e["tid"] != 0), key=lambda e: e["ts"])
    gaps, busy_until = [], begin
    for e in compute:
        if e["ts"] > busy_until:
            gaps.append((busy_until, e["ts"], e["name"]))
        busy_until = max(busy_until, e["ts"] + e["dur"])
    if end > busy_until:
        gaps.append((busy_until, end, "(end of step)"))
    groups = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for lo, hi, op in gaps:
        under, last = 0.0, None
        for c in comm:
            a, b = max(lo, c["ts"]), min(hi, c["ts"] + c["dur"])
            if b > a:
                under += b - a
                last = c["name"]
        key = (shape_free(op), shape_free(last) if last else "none")
        groups[key][0] += 1
        groups[key][1] += hi - lo
        groups[key][2] += under
    total = sum(hi - lo for lo, hi, _ in gaps)
    print(f"\ncompute-stream gaps: {total / 1000:.2f} ms")
    print(f"{'op after the gap':48s} {'collective during it':24s} {'gaps':>5s} {'ms':>8s} {'under comm':>10s}")
    for (op, coll), (n, us, under) in sorted(groups.items(), key=lambda kv: -kv[1][1])[:args.top]:
        print(f"{op[:48]:48s} {coll[:24]:24s} {n:5d} {us / 1000:8.2f} {under / 1000:10.2f}")


if __name__ == "__main__":
    main()
