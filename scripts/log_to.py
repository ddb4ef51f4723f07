#!/usr/bin/env python3
"""Follows a run's metrics.jsonl as it grows and sends its numbers to TensorBoard or Weights &
Biases, so a nanodist run shows up where people already watch their runs. Start it beside
`nanodist train` (before, during or after: it waits for the file, reads what is there, then
follows); it stops after the run's final record, or at Ctrl-C.

  tensorboard: event files in OUT/tensorboard (--logdir to change), through
               torch.utils.tensorboard or tensorboardX, whichever is installed;
               then `tensorboard --logdir OUT/tensorboard`.
  wandb:       an offline run in OUT/wandb (no network needed; `wandb sync OUT/wandb/offline-run-*`
               uploads it later), or --online.

What is sent (train/metrics.cpp writes the records): step records as train/loss, train/lr,
train/grad_norm, perf/ms, perf/tok_per_s, perf/mfu, perf/flops_per_s (and train/loss_scale,
train/skipped_steps with fp16); eval records as val/loss, val/train_loss, time/elapsed_s;
layer statistics as layers/<name>/<stat>; the final record as the run's summary; OUT/run.conf as
its configuration. null (a non-finite value) is left out. A resumed run logs the steps after its
checkpoint again: steps already sent are skipped.

usage: scripts/log_to.py tensorboard|wandb OUT_OR_METRICS_JSONL [--logdir DIR] [--project P]
                         [--name N] [--online] [--once] [--poll SECONDS]
"""
import argparse
import json
import math
import os
import sys
import time

STEP_NAMES = {"loss": "train/loss", "lr": "train/lr", "grad_norm": "train/grad_norm", "ms": "perf/ms",
              "tok_per_s": "perf/tok_per_s", "mfu": "perf/mfu", "flops_per_s": "perf/flops_per_s",
              "loss_scale": "train/loss_scale", "skipped_steps": "train/skipped_steps"}
EVAL_NAMES = {"val_loss": "val/loss", "train_loss": "val/train_loss", "elapsed_s": "time/elapsed_s"}


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def flatten(prefix, value, out):
    """Numeric leaves of nested dicts and lists as prefix/key/... -> value; a list entry that is a
    dict with a "layer" (the per-block statistics) is named block<layer>."""
    if isinstance(value, dict):
        for key, inner in value.items():
            flatten(f"{prefix}/{key}", inner, out)
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            if isinstance(inner, dict) and is_number(inner.get("layer")):
                flatten(f"{prefix}/block{int(inner['layer'])}", {k: v for k, v in inner.items() if k != "layer"}, out)
            else:
                flatten(f"{prefix}/{i}", inner, out)
    elif is_number(value):
        out[prefix] = float(value)


def scalars_of(record):
    """One metrics.jsonl record -> (kind, step, {name: value}): kind "step", "eval", "layers" or
    "final" (step None), or None for a record this script does not know."""
    if not isinstance(record, dict):
        return None
    if record.get("final") is True:
        values = {}
        for key, value in record.items():
            if key != "final":
                flatten(key, value, values)
        return "final", None, values
    step = record.get("step")
    if not is_number(step):
        return None
    values = {}
    if "layer_stats" in record:
        flatten("layers", record["layer_stats"], values)
        return "layers", int(step), values
    names = EVAL_NAMES if "val_loss" in record else STEP_NAMES
    for key, value in record.items():
        if key != "step" and is_number(value):
            values[names.get(key, key)] = float(value)
    return ("eval" if "val_loss" in record else "step"), int(step), values


def read_run_conf(run_dir):
    """OUT/run.conf (`key = value` lines) as a dict of strings; {} when there is none."""
    config = {}
    try:
        with open(os.path.join(run_dir, "run.conf")) as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if "=" in line:
                    key, value = line.split("=", 1)
                    config[key.strip()] = value.strip()
    except OSError:
        pass
    return config


class Follower:
    """Yields the records of a metrics.jsonl that is still being written: whole lines only (a
    line without its newline yet waits), from the start again when the file is replaced (a run
    started over with --overwrite)."""

    def __init__(self, path):
        self.path, self.file, self.inode, self.pending = path, None, None, b""
        self.restarted = False  # set when the file was replaced; the reader clears it

    def _reopen_if_replaced(self):
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        if self.file is not None and (st.st_ino != self.inode or st.st_size < self.file.tell()):
            self.file.close()
            self.file = None
            self.restarted = True
            print(f"log_to.py: {self.path} was replaced; reading it from the start", file=sys.stderr)
        if self.file is None:
            self.file, self.inode, self.pending = open(self.path, "rb"), st.st_ino, b""
        return True

    def records(self):
        """The records complete now, in order (none when the file does not exist yet)."""
        if not self._reopen_if_replaced():
            return []
        self.pending += self.file.read()
        lines = self.pending.split(b"\n")
        self.pending = lines.pop()
        out = []
        for line in lines:
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except ValueError:  # not JSON, or not UTF-8
                print(f"log_to.py: skipping a line that is not JSON: {line[:80]!r}", file=sys.stderr)
        return out

    def close(self):
        if self.file is not None:
            self.file.close()


def follow(path, sink, once=False, poll=2.0, should_stop=lambda: False):
    """Sends the records of `path` to `sink` (scalars(step, values), summary(values)) until the
    final record, or, with once, until the end of what is there. Returns the records sent."""
    follower = Follower(path)
    last_step = {}  # kind -> the last step sent: a resumed run's repeated steps are skipped
    sent, skipped, done = 0, 0, False
    try:
        while not done and not should_stop():
            records = follower.records()
            if follower.restarted:  # a new run in the same directory: its steps start over
                follower.restarted = False
                last_step.clear()
            for record in records:
                parsed = scalars_of(record)
                if parsed is None:
                    continue
                kind, step, values = parsed
                if kind == "final":
                    sink.summary(values)
                    done = True
                    sent += 1
                    break
                if step <= last_step.get(kind, -1):
                    skipped += 1
                    continue
                last_step[kind] = step
                if values:
                    sink.scalars(step, values)
                    sent += 1
            if once and not records:
                break
            if not done and not records:
                time.sleep(poll)
    finally:
        follower.close()
    if skipped:
        print(f"log_to.py: skipped {skipped} records of steps already sent (a resumed run)", file=sys.stderr)
    return sent


class TensorBoardSink:
    def __init__(self, logdir, config):
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            try:
                from tensorboardX import SummaryWriter
            except ImportError:
                sys.exit("log_to.py: tensorboard needs torch.utils.tensorboard (pip install torch tensorboard) "
                         "or tensorboardX (pip install tensorboardX); neither is installed")
        self.writer = SummaryWriter(log_dir=logdir)
        self.last_step = 0
        if config:
            self.writer.add_text("run.conf", "\n".join(f"    {k} = {v}" for k, v in sorted(config.items())), 0)

    def scalars(self, step, values):
        for name, value in values.items():
            self.writer.add_scalar(name, value, step)
        self.last_step = max(self.last_step, step)

    def summary(self, values):
        for name, value in values.items():
            self.writer.add_scalar("final/" + name, value, self.last_step)

    def close(self):
        self.writer.close()


class WandbSink:
    def __init__(self, run_dir, project, name, online, config):
        try:
            import wandb
        except ImportError:
            sys.exit("log_to.py: wandb is not installed (pip install wandb)")
        self.run = wandb.init(project=project, name=name, dir=run_dir, config=config,
                              mode="online" if online else "offline")

    def scalars(self, step, values):
        self.run.log(values, step=step)

    def summary(self, values):
        self.run.summary.update(values)

    def close(self):
        self.run.finish()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("tool", choices=["tensorboard", "wandb"])
    p.add_argument("run", help="the run's output directory (or its metrics.jsonl)")
    p.add_argument("--logdir", help="tensorboard: where the event files go (default OUT/tensorboard)")
    p.add_argument("--project", default="nanodist", help="wandb project (default nanodist)")
    p.add_argument("--name", help="wandb run name (default: the run directory's name)")
    p.add_argument("--online", action="store_true", help="wandb: send as it goes instead of an offline run")
    p.add_argument("--once", action="store_true", help="send what the file holds now and stop")
    p.add_argument("--poll", type=float, default=2.0, help="seconds between looks at the file (default 2)")
    args = p.parse_args(argv)

    path = os.path.join(args.run, "metrics.jsonl") if not args.run.endswith(".jsonl") else args.run
    run_dir = os.path.dirname(os.path.abspath(path))
    if args.once and not os.path.isfile(path):
        sys.exit(f"log_to.py: no metrics file {path}")
    config = read_run_conf(run_dir)
    if args.tool == "tensorboard":
        sink = TensorBoardSink(args.logdir or os.path.join(run_dir, "tensorboard"), config)
    else:
        sink = WandbSink(run_dir, args.project, args.name or os.path.basename(run_dir), args.online, config)
    if not os.path.isfile(path):
        print(f"log_to.py: waiting for {path}", file=sys.stderr)
    stopped = False
    try:
        sent = follow(path, sink, once=args.once, poll=args.poll)
    except KeyboardInterrupt:
        stopped = True
    finally:
        sink.close()
    if args.tool == "tensorboard":
        where = args.logdir or os.path.join(run_dir, "tensorboard")
    else:
        where = os.path.join(run_dir, "wandb")
    print(f"log_to.py: {'stopped' if stopped else f'sent {sent} records'} of {path} to {args.tool} ({where})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
