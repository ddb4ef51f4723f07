#!/usr/bin/env python3
"""scripts/log_to.py: following a metrics.jsonl that is being written (lines arriving in pieces,
a resumed attempt repeating steps, the file replaced by a new run, the final record ending it)
into a recording sink, checked against values written here; a real `nanodist train` run's file
read whole; a clear error where TensorBoard or wandb is missing (hidden by stub modules); and,
where they are installed, the real event file and offline wandb run.

usage: log_to_test.py --source REPO --nanodist BIN        (exit 0 passed, 1 failed)
"""
import argparse
import glob
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
import time


class Failure(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Failure(message)


class RecordingSink:
    def __init__(self):
        self.calls = []

    def scalars(self, step, values):
        self.calls.append(("scalars", step, dict(values)))

    def summary(self, values):
        self.calls.append(("summary", dict(values)))


def step_record(step, loss, **more):
    return {"step": step, "loss": loss, "lr": 1e-3, "grad_norm": None, "ms": 10.0, "tok_per_s": 5000.0,
            "mfu": None, "flops_per_s": 1e9, **more}


def test_following(log_to, tmp):
    path = os.path.join(tmp, "live", "metrics.jsonl")
    sink = RecordingSink()
    result = {}
    follower = threading.Thread(target=lambda: result.update(sent=log_to.follow(path, sink, poll=0.01)))
    follower.start()  # before the file exists: it waits for it

    def write(text, pause=0.05):
        with open(path, "a") as f:
            f.write(text)
        time.sleep(pause)

    time.sleep(0.1)
    os.makedirs(os.path.dirname(path))
    line = json.dumps(step_record(1, 4.0)) + "\n"
    write(line[:20])  # half a line: nothing may be sent for it yet
    expect(sink.calls == [], f"a partial line was sent: {sink.calls}")
    write(line[20:])
    write(json.dumps(step_record(5, 3.0)) + "\n" + "not json\n")
    write(json.dumps({"step": 5, "val_loss": 3.1, "train_loss": 3.0, "elapsed_s": 1.5}) + "\n")
    write(json.dumps({"step": 5, "layer_stats": {"tensors": {"wte": {"grad_norm": 0.5}},
                                                 "blocks": [{"layer": 0, "attn_entropy": [1.5, 2.5]}]}}) + "\n")
    # A resumed attempt logs step 5 again (skipped), then goes on.
    write(json.dumps(step_record(5, 9.0)) + "\n" + json.dumps(step_record(10, 2.0, loss_scale=1024.0)) + "\n")
    expect(follower.is_alive(), "the follower stopped before the final record")
    write('{"final":true,"best_val_loss":3.1,"params":100,"tokens":1000}\n')
    follower.join(10)
    expect(not follower.is_alive(), "the follower did not stop at the final record")

    train = {"train/lr": 1e-3, "perf/ms": 10.0, "perf/tok_per_s": 5000.0, "perf/flops_per_s": 1e9}
    expected = [
        ("scalars", 1, {"train/loss": 4.0, **train}),
        ("scalars", 5, {"train/loss": 3.0, **train}),
        ("scalars", 5, {"val/loss": 3.1, "val/train_loss": 3.0, "time/elapsed_s": 1.5}),
        ("scalars", 5, {"layers/tensors/wte/grad_norm": 0.5, "layers/blocks/block0/attn_entropy/0": 1.5,
                        "layers/blocks/block0/attn_entropy/1": 2.5}),
        ("scalars", 10, {"train/loss": 2.0, "train/loss_scale": 1024.0, **train}),
        ("summary", {"best_val_loss": 3.1, "params": 100.0, "tokens": 1000.0}),
    ]
    expect(sink.calls == expected, "calls:\n" + "\n".join(map(str, sink.calls)))
    expect(result.get("sent") == len(expected), f"sent {result.get('sent')}")

    # The file replaced by a new run in the same directory: read from the start, steps anew.
    sink = RecordingSink()
    follower = threading.Thread(target=lambda: log_to.follow(path, sink, poll=0.01))
    with open(path, "w") as f:
        f.write(json.dumps(step_record(1, 4.0)) + "\n")
    follower.start()
    time.sleep(0.2)
    os.replace(path, path + ".old")
    with open(path, "w") as f:
        f.write(json.dumps(step_record(1, 7.0)) + "\n" + '{"final":true,"best_val_loss":6.0}\n')
    follower.join(10)
    expect(not follower.is_alive(), "the follower did not stop at the new file's final record")
    expect([c[1] for c in sink.calls] == [1, 1, {"best_val_loss": 6.0}] and sink.calls[1][2]["train/loss"] == 7.0,
           f"after the replacement: {sink.calls}")


def tiny_run(ctx, tmp):
    data, out, text = (os.path.join(tmp, n) for n in ("data", "run", "in.txt"))
    with open(text, "w") as f:
        f.write(" ".join(["the king and the queen of rome"] * 300))
    subprocess.run([ctx.nanodist, "prepare", "--input", text, "--out", data], check=True, capture_output=True)
    subprocess.run([ctx.nanodist, "train", "--data", data, "--out", out, "--n-layer", "1", "--n-head", "2",
                    "--n-embd", "16", "--block-size", "16", "--batch-size", "4", "--max-iters", "20",
                    "--eval-interval", "10", "--eval-iters", "2", "--log-interval", "5", "--layer-stats", "10"],
                   check=True, capture_output=True)
    return out


def test_real_run(log_to, run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    sink = RecordingSink()
    log_to.follow(os.path.join(run_dir, "metrics.jsonl"), sink, once=True)
    scalars = [c for c in sink.calls if c[0] == "scalars"]
    expect(len(scalars) == len(records) - 1, f"{len(scalars)} scalar records of {len(records)} lines")
    expect(sink.calls[-1] == ("summary", {k: float(v) for k, v in records[-1].items() if k != "final"}),
           f"summary {sink.calls[-1]} vs {records[-1]}")
    losses = [(c[1], c[2]["train/loss"]) for c in scalars if "train/loss" in c[2]]
    expect(losses == [(r["step"], r["loss"]) for r in records if "loss" in r], f"losses {losses}")
    expect(log_to.read_run_conf(run_dir).get("n-layer") == "1", "run.conf not read")


def test_missing_libraries(ctx, tmp, run_dir):
    hide = os.path.join(tmp, "hide")
    for name in ("torch", "tensorboardX", "wandb"):
        os.makedirs(os.path.join(hide, name))
        with open(os.path.join(hide, name, "__init__.py"), "w") as f:
            f.write("raise ImportError('hidden by log_to_test.py')\n")
    env = dict(os.environ, PYTHONPATH=hide)
    script = os.path.join(ctx.source, "scripts", "log_to.py")
    for tool, message in (("tensorboard", "tensorboard needs torch.utils.tensorboard (pip install torch tensorboard) "
                                          "or tensorboardX (pip install tensorboardX)"),
                          ("wandb", "wandb is not installed (pip install wandb)")):
        r = subprocess.run([sys.executable, script, tool, run_dir, "--once"], capture_output=True, text=True, env=env)
        expect(r.returncode != 0 and message in r.stderr, f"{tool} without its library: {r.returncode} {r.stderr}")
        expect("Traceback" not in r.stderr, f"a traceback instead of a sentence: {r.stderr}")


def test_installed_libraries(ctx, run_dir):
    script = os.path.join(ctx.source, "scripts", "log_to.py")
    if importlib.util.find_spec("tensorboardX") or importlib.util.find_spec("torch"):
        subprocess.run([sys.executable, script, "tensorboard", run_dir, "--once"], check=True, capture_output=True)
        events = glob.glob(os.path.join(run_dir, "tensorboard", "events.out.tfevents.*"))
        expect(events and os.path.getsize(events[0]) > 1000, f"event files {events}")
    else:
        print("tensorboard part skipped: neither torch nor tensorboardX is installed")
    if importlib.util.find_spec("wandb"):
        env = dict(os.environ, WANDB_SILENT="true")
        subprocess.run([sys.executable, script, "wandb", run_dir, "--once"], check=True, capture_output=True, env=env)
        runs = glob.glob(os.path.join(run_dir, "wandb", "offline-run-*", "*.wandb"))
        expect(runs and os.path.getsize(runs[0]) > 0, f"offline runs {runs}")
    else:
        print("wandb part skipped: wandb is not installed")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True)
    parser.add_argument("--nanodist", required=True)
    ctx = parser.parse_args()
    sys.path.insert(0, os.path.join(ctx.source, "scripts"))
    import log_to
    with tempfile.TemporaryDirectory(prefix="nd_log_to_") as tmp:
        try:
            test_following(log_to, tmp)
            run_dir = tiny_run(ctx, tmp)
            test_real_run(log_to, run_dir)
            test_missing_libraries(ctx, tmp, run_dir)
            test_installed_libraries(ctx, run_dir)
        except Failure as e:
            print(f"FAILED: {e}")
            return 1
    print("passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
