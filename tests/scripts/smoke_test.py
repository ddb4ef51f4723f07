#!/usr/bin/env python3
"""Smoke tests of the Python scripts on tiny inputs made here (some by a real `nanodist train`).
Exit 0 = passed, 1 = failed, 77 = skipped because a package the script needs is missing
(ctest SKIP_RETURN_CODE), so CI without matplotlib, h5py or torch stays green.

usage: smoke_test.py {plot_run,plot_bandwidth,export_hf,corpus_words,collective_bars,check_plan,plan_fits,gpu_collectives}
                     --source REPO --nanodist BIN
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

SKIP = 77
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class Failure(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Failure(message)


def require(*modules):
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        print(f"SKIP: needs {' '.join(missing)}")
        sys.exit(SKIP)


def run(args, expect_ok=True):
    r = subprocess.run(args, capture_output=True, text=True)
    if expect_ok and r.returncode != 0:
        raise Failure(f"{' '.join(args)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def expect_png(path):
    expect(os.path.isfile(path), f"{path} was not written")
    with open(path, "rb") as f:
        expect(f.read(8) == PNG_MAGIC, f"{path} is not a PNG")
    expect(os.path.getsize(path) > 20000, f"{path} is only {os.path.getsize(path)} bytes")


def tiny_text(chars):
    words = ["the", "king", "and", "queen", "of", "rome", "shall", "speak", "now", "to", "thee", "Hello,", "world!"]
    out, i = [], 0
    while sum(map(len, out)) < chars:
        out.append(words[(i * 7 + i // 3) % len(words)] + ("\n" if i % 9 == 0 else " "))
        i += 1
    return "".join(out)[:chars]


def train_tiny(ctx, tmp, name, tokenizer="char", extra=()):
    """prepare + 20 steps of a 2-layer model; -> the run's output directory."""
    data, out = os.path.join(tmp, name + "_data"), os.path.join(tmp, name)
    text = os.path.join(tmp, "in.txt")
    with open(text, "w") as f:
        f.write(tiny_text(4000))
    prep = [ctx.nanodist, "prepare", "--input", text, "--out", data, "--tokenizer", tokenizer]
    if tokenizer == "bpe":
        prep += ["--vocab-size", "300"]
    run(prep)
    run([ctx.nanodist, "train", "--data", data, "--out", out, "--n-layer", "2", "--n-head", "2", "--n-embd", "16",
         "--block-size", "16", "--batch-size", "4", "--max-iters", "20", "--eval-interval", "10", "--eval-iters", "2",
         "--log-interval", "5", "--warmup-iters", "2", "--lr-decay-iters", "20", *extra])
    return out


def test_plot_run(ctx, tmp):
    require("matplotlib")
    script = os.path.join(ctx.source, "scripts", "plot_run.py")
    real = train_tiny(ctx, tmp, "real")
    hand = os.path.join(tmp, "ablate", "no-clip", "seed1")
    other = os.path.join(tmp, "ablate", "control", "seed1")
    for run_dir, lr in ((hand, 1e-3), (other, 2e-3)):
        os.makedirs(run_dir)
        with open(os.path.join(run_dir, "metrics.jsonl"), "w") as f:
            for step in range(1, 41):
                loss = None if step == 30 else 4.0 / step ** 0.3  # a non-finite step is null
                f.write(json.dumps({"step": step, "loss": loss, "lr": lr, "grad_norm": 1.0 / step, "ms": 10,
                                    "tok_per_s": 5000 + step, "mfu": None, "flops_per_s": 1e9}) + "\n")
                if step % 20 == 0:
                    f.write(json.dumps({"step": step, "val_loss": 4.1 / step ** 0.3, "train_loss": 4.0 / step ** 0.3,
                                        "elapsed_s": step / 10}) + "\n")
            f.write('{"final":true,"best_val_loss":1.4,"params":100,"tokens":1000}\n')
    png = os.path.join(tmp, "runs.png")
    r = run([sys.executable, script, real, hand, os.path.join(other, "metrics.jsonl"), "--out", png, "--smooth", "0.5"])
    expect_png(png)
    expect("wrote" in r.stdout, r.stdout)

    sys.path.insert(0, os.path.dirname(script))
    import plot_run

    labels = plot_run.run_labels([os.path.join(hand, "metrics.jsonl"), os.path.join(other, "metrics.jsonl")])
    expect(labels == ["no-clip/seed1", "control/seed1"], f"labels {labels}")
    got = plot_run.read_run(os.path.join(real, "metrics.jsonl"))
    # CLI.md: a step line at step 1, every --log-interval and the last step; evals every --eval-interval.
    expect(got["steps"]["step"] == [1, 5, 10, 15, 20], f"steps {got['steps']['step']}")
    expect(got["evals"]["step"] == [10, 20], f"evals {got['evals']['step']}")
    expect(all(v > 0 for v in got["steps"]["tok_per_s"]), "tokens/s")
    hand_run = plot_run.read_run(os.path.join(hand, "metrics.jsonl"))
    expect(hand_run["steps"]["loss"][29] != hand_run["steps"]["loss"][29], "null loss must read as NaN")

    # A resumed run: attempt 1 logged steps 1..30 and evals 10, 20, 30, then died; attempt 2 resumed
    # from the checkpoint at step 20 and logged 21..40 and evals 30, 40. Each step once, attempt 2's.
    resumed = os.path.join(tmp, "resumed.jsonl")
    with open(resumed, "w") as f:
        for attempt, steps in ((1, range(1, 31)), (2, range(21, 41))):
            for step in steps:
                f.write(json.dumps({"step": step, "loss": 10.0 * attempt + step, "lr": 1e-3, "grad_norm": 1.0,
                                    "tok_per_s": 100.0}) + "\n")
                if step % 10 == 0:
                    f.write(json.dumps({"step": step, "val_loss": 10.0 * attempt + step, "train_loss": 1.0}) + "\n")
    got = plot_run.read_run(resumed)
    expect(got["steps"]["step"] == list(range(1, 41)), f"resumed steps {got['steps']['step']}")
    expect(got["steps"]["loss"][20:] == [20.0 + s for s in range(21, 41)], "steps 21.. come from the resumed attempt")
    expect(got["evals"]["step"] == [10, 20, 30, 40], f"resumed evals {got['evals']['step']}")
    expect(got["evals"]["val_loss"] == [20.0, 30.0, 50.0, 60.0], f"resumed evals {got['evals']['val_loss']}")
    run([sys.executable, script, resumed, "--out", os.path.join(tmp, "resumed.png")])

    # --layer-stats records drawn as layer x step heat maps; a run without them is one error line.
    stats = train_tiny(ctx, tmp, "stats", extra=("--layer-stats", "2"))
    heat = os.path.join(tmp, "heat.png")
    run([sys.executable, script, stats, "--out", os.path.join(tmp, "stats.png"), "--heatmap", heat])
    expect_png(heat)
    steps, layers, grids = plot_run.read_layer_stats(os.path.join(stats, "metrics.jsonl"))
    expect(steps == list(range(2, 21, 2)) and layers == 2, f"heat map steps {steps}, layers {layers}")
    expect(all(v > 0 for row in grids["block gradient norm"] for v in row), "gradient norms")
    ratio = os.path.join(tmp, "ratio.png")
    run([sys.executable, script, stats, "--out", os.path.join(tmp, "stats2.png"), "--heatmap", ratio, "--against", stats])
    expect_png(ratio)
    _, _, same = plot_run.against(os.path.join(stats, "metrics.jsonl"), os.path.join(stats, "metrics.jsonl"))
    expect(all(v == 0 for v in same["block gradient norm"].flatten()), "a run against itself is log10(1) = 0")
    r = run([sys.executable, script, real, "--heatmap", heat], expect_ok=False)
    expect(r.returncode != 0 and "--layer-stats" in r.stderr, r.stderr)

    broken = os.path.join(tmp, "broken.jsonl")
    with open(broken, "w") as f:
        f.write('{"step":1,"loss":2.0}\n{"step":2,"loss":\n')
    r = run([sys.executable, script, broken, "--out", os.path.join(tmp, "b.png")], expect_ok=False)
    expect(r.returncode != 0 and "broken.jsonl:2: not JSON" in r.stderr and r.stderr.count("\n") == 1,
           f"broken file: rc {r.returncode}, stderr {r.stderr!r}")


def test_plot_bandwidth(ctx, tmp):
    require("matplotlib")
    script = os.path.join(ctx.source, "scripts", "plot_bandwidth.py")
    folder = os.path.join(ctx.source, "docs", "bandwidth")
    csvs = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".csv"))
    expect(csvs, f"no CSVs in {folder}")
    png = os.path.join(tmp, "bw.png")
    run([sys.executable, script, *csvs, "--out", png])
    expect_png(png)
    # Every collective, a fit table and a point-to-point matrix, as bench-comm writes them.
    curves = os.path.join(tmp, "ops.csv")
    with open(curves, "w") as f:
        f.write("op,impl,device,nranks,size,count,type,redop,time_us,algbw_gbps,busbw_gbps,wrong\n")
        for op in ("allreduce", "reducescatter", "allgather", "broadcast", "alltoall", "sendrecv"):
            for impl in ("native", "ring", "oneshot"):
                for k in range(3, 20):
                    size = 1 << k
                    t = 8.0 + size / 2e5
                    f.write(f"{op},{impl},cuda,2,{size},{size // 4},f32,none,{t},{size / t / 1e3},{size / t / 1e3},0\n")
    fits = os.path.join(tmp, "fits.csv")
    with open(fits, "w") as f:
        f.write("op,impl,nranks,alpha_us,beta_us_per_byte,rms_rel_err,max_rel_err,points\n")
        f.write("allreduce,native,2,8.0,5e-06,0.01,0.02,17\n")
        # A piecewise fit (a row per piece, with its size range) in the newer 10-field rows.
        f.write("op,impl,nranks,alpha_us,beta_us_per_byte,rms_rel_err,max_rel_err,points,min_bytes,max_bytes\n")
        f.write("allreduce,ring,2,9.0,0,0.01,0.02,8,8,1024\n")
        f.write("allreduce,ring,2,12.0,4e-06,0.01,0.02,9,2048,1073741824\n")
    p2p = os.path.join(tmp, "p2p.csv")
    with open(p2p, "w") as f:
        f.write("op,impl,device,nranks,src,dst,min_bytes,max_bytes,type,latency_us,bw_gbps,wrong\n")
        for s in range(3):
            for d in range(3):
                if s != d:
                    f.write(f"p2p-matrix,native,cuda,3,{s},{d},8,1073741824,f32,{9 + s},{300 + d},0\n")
    png = os.path.join(tmp, "all.png")
    run([sys.executable, script, curves, fits, p2p, "--out", png])
    expect_png(png)


def test_export_hf(ctx, tmp):
    require("numpy", "h5py", "safetensors")
    import h5py
    import numpy as np
    from safetensors.numpy import load_file

    script = os.path.join(ctx.source, "scripts", "export_hf.py")
    run_dir = train_tiny(ctx, tmp, "nobias", extra=("--bias", "false"))
    ckpt = os.path.join(run_dir, "ckpt_000020.h5")
    hf = os.path.join(tmp, "hf")
    run([sys.executable, script, run_dir, hf, "--no-install"])
    for name in ("config.json", "model.safetensors", "vocab.json", "merges.txt", "tokenizer_config.json",
                 "nanodist_tokenizer.txt", "README.md"):
        expect(os.path.isfile(os.path.join(hf, name)), f"{name} missing")
    with h5py.File(ckpt, "r") as f:
        params = {k: v[()] for k, v in f["params"].items()}
        vocab = int(f["config"].attrs["vocab_size"])
    with open(os.path.join(hf, "config.json")) as f:
        config = json.load(f)
    expect((config["model_type"], config["n_layer"], config["n_head"], config["n_embd"], config["n_positions"],
            config["vocab_size"], config["activation_function"], config["tie_word_embeddings"]) ==
           ("gpt2", 2, 2, 16, 16, vocab, "gelu_new", True), f"config {config}")
    tensors = load_file(os.path.join(hf, "model.safetensors"))
    # GPT-2 keeps Conv1D weights as (in, out): nanodist's (out, in) transposed; biases are zeros.
    for i in range(2):
        for sub, out_features in (("attn.c_attn", 48), ("attn.c_proj", 16), ("mlp.c_fc", 64), ("mlp.c_proj", 16)):
            name = f"transformer.h.{i}.{sub}"
            expect(np.array_equal(tensors[name + ".weight"], params[name + ".weight"].T), name)
            expect(tensors[name + ".bias"].shape == (out_features,) and not tensors[name + ".bias"].any(), name)
        for ln in ("ln_1", "ln_2"):
            name = f"transformer.h.{i}.{ln}"
            expect(np.array_equal(tensors[name + ".weight"], params[name + ".weight"]), name)
            expect(not tensors[name + ".bias"].any(), name)
    expect(np.array_equal(tensors["transformer.wte.weight"], params["transformer.wte.weight"]), "wte")
    expect(len(tensors) == 2 + 2 * 12 + 2, f"{len(tensors)} tensors: {sorted(tensors)}")
    with open(os.path.join(hf, "vocab.json"), encoding="utf-8") as f:
        expect(sorted(json.load(f).values()) == list(range(vocab)), "vocab.json ids")

    # A GPU run pads the vocabulary rows to a multiple of 128: the export drops the padding.
    # (Beside the index: its virtual datasets name the part files relative to its directory.)
    padded = os.path.join(run_dir, "padded.h5")
    with h5py.File(ckpt, "r") as src, h5py.File(padded, "w") as dst:
        for key in src:
            src.copy(key, dst)
        wte = dst["params/transformer.wte.weight"][()]
        del dst["params/transformer.wte.weight"]
        pad = np.random.default_rng(0).normal(size=(128 - wte.shape[0], wte.shape[1])).astype(np.float32)
        dst["params/transformer.wte.weight"] = np.concatenate([wte, pad])
        dst["config"].attrs["padded_vocab_size"] = 128
    run([sys.executable, script, padded, os.path.join(tmp, "hf_padded"), "--no-install"])
    got = load_file(os.path.join(tmp, "hf_padded", "model.safetensors"))["transformer.wte.weight"]
    expect(np.array_equal(got, params["transformer.wte.weight"]), "padded rows must be dropped")

    ablated = train_tiny(ctx, tmp, "noln", extra=("--no-layernorm",))
    r = run([sys.executable, script, ablated, os.path.join(tmp, "hf_noln"), "--no-install"], expect_ok=False)
    expect(r.returncode != 0 and "--no-layernorm" in r.stderr and r.stderr.count("\n") == 1,
           f"no-layernorm export: rc {r.returncode}, stderr {r.stderr!r}")

    bpe = train_tiny(ctx, tmp, "bpe", tokenizer="bpe")
    hf_bpe = os.path.join(tmp, "hf_bpe")
    run([sys.executable, script, bpe, hf_bpe, "--no-install"])
    with open(os.path.join(hf_bpe, "merges.txt"), encoding="utf-8") as f:
        merges = f.read().splitlines()
    expect(merges[0] == "#version: 0.2" and len(merges) > 1, "merges.txt")

    # `nanodist eval` over each val split, for scripts/hf_eval_loss.py to score the same tokens.
    sys.path.insert(0, os.path.dirname(script))
    from hf_eval_loss import read_token_file

    eval_json = {}
    for source, out in ((run_dir, hf), (bpe, hf_bpe)):
        val = source + "_data/val.bin"
        line = run([ctx.nanodist, "eval", "--ckpt", source, "--data", source + "_data", "--json"]).stdout
        expect(json.loads(line)["tokens"] == len(read_token_file(val)) - 1, f"{val}: {line}")
        eval_json[out] = os.path.join(tmp, os.path.basename(out) + "_eval.json")
        with open(eval_json[out], "w") as f:
            f.write(line)

    have = {m: importlib.util.find_spec(m) is not None for m in ("torch", "transformers")}
    if have["transformers"] and have["torch"]:
        loss_script = os.path.join(ctx.source, "scripts", "hf_eval_loss.py")
        for run_dir, out in ((run_dir, hf), (bpe, hf_bpe)):
            r = run([sys.executable, script, run_dir, out, "--no-install", "--check"])
            expect("max |transformers - gpt_torch|" in r.stdout and "tokenizer:" in r.stdout, r.stdout)
            print(r.stdout.strip())
            # The exported model scores the val split as `nanodist eval` does.
            r = run([sys.executable, loss_script, out, run_dir + "_data/val.bin", "--expect", eval_json[out]])
            expect("|transformers - nanodist|" in r.stdout, r.stdout)
            print(r.stdout.strip())
    elif have["transformers"]:
        for run_dir, out in ((run_dir, hf), (bpe, hf_bpe)):
            r = run([sys.executable, script, run_dir, out, "--no-install", "--check", "--tokenizer-check-only"])
            expect("agree" in r.stdout, r.stdout)
        print("note: no torch here, so the logits check (--check) did not run; tokenizers checked")
    else:
        print("note: no transformers here, so --check did not run")


def test_corpus_words(ctx, tmp):
    """The demo's measure: the share of a sample's words found in the corpus, read from a text file
    or decoded from a prepared data directory (char and BPE), the prompt left out."""
    script = os.path.join(ctx.source, "scripts", "corpus_words.py")
    text = os.path.join(tmp, "corpus.txt")
    with open(text, "w") as f:
        f.write("In the beginning God created the heaven and the earth. The LORD's word.\n" * 40)
    sample = os.path.join(tmp, "sample.txt")
    with open(sample, "w") as f:
        f.write("And God said the earth hout beginning lord's zzz created")  # 5 of 7 after the prompt
    for tokenizer in ("char", "bpe"):
        data = os.path.join(tmp, "data_" + tokenizer)
        prep = [ctx.nanodist, "prepare", "--input", text, "--out", data, "--tokenizer", tokenizer]
        run(prep + (["--vocab-size", "300"] if tokenizer == "bpe" else []))
        for corpus in (text, data):
            r = run([sys.executable, script, corpus, sample, "--prompt", "And God said"])
            expect(r.stdout.startswith("words: 5 of 7 (71.4%)"), f"{corpus}: {r.stdout}")
    r = run([sys.executable, script, text, sample, "--prompt", "And God said", "--min", "0.85"], expect_ok=False)
    expect(r.returncode == 1, f"--min 0.85 on 71%: exit {r.returncode}")


def test_collective_bars(ctx, tmp):
    """The bar tables from CSVs whose ratios are known: one-shot at half of NCCL's time and push at
    0.62 (at 8 B; absent at 1 KB), auto 4% over the best at one size and 10% at another, the ring's reduce-scatter at 95% of NCCL's busbw and
    its all-gather at 85%, and a plan row."""
    header = "op,impl,device,nranks,size,count,type,redop,time_us,algbw_gbps,busbw_gbps,wrong,timing\n"
    with open(os.path.join(tmp, "allreduce_compare_eager_2gpu_f32.csv"), "w") as f:
        f.write(header)
        for size in (8, 1024, 1 << 30):
            times = {"oneshot": 4.0, "twoshot": 6.0, "ring": 20.0, "native": 8.0}
            if size == 8:
                times["push"] = 5.0
            if size == 1 << 30:
                times = {"ring": 3000.0, "native": 2900.0}  # no peer choice above the buffer
            auto = {8: 4.16, 1024: 4.4, 1 << 30: 2900.0}[size]
            for impl, t in list(times.items()) + [("auto", auto)]:
                f.write(f"allreduce,{impl},cuda,2,{size},{size // 4},f32,sum,{t},1,1,0,eager\n")
    with open(os.path.join(tmp, "reducescatter_native_2gpu_f32.csv"), "w") as f:
        f.write(header)
        f.write(f"reducescatter,native,cuda,2,{64 << 20},{16 << 20},f32,sum,100,200,100.0,0,eager\n")
        f.write(f"allgather,native,cuda,2,{64 << 20},{16 << 20},f32,none,100,200,100.0,0,eager\n")
    with open(os.path.join(tmp, "reducescatter_ring_2gpu_f32.csv"), "w") as f:
        f.write(header.replace(",timing", ""))  # an older CSV without the timing column reads as eager
        f.write(f"reducescatter,ring,cuda,2,{64 << 20},{16 << 20},f32,sum,105,190,95.0,0\n")
        f.write(f"allgather,ring,cuda,2,{64 << 20},{16 << 20},f32,none,118,170,85.0,0\n")
    with open(os.path.join(tmp, "plan_vs_measured.tsv"), "w") as f:
        f.write("run\tpredicted_exposed_ms\tmeasured_exposed_ms\texposed_ratio\tpredicted_comm_ms\tmeasured_comm_ms\t"
                "comm_ratio\nsmall_dp2\t0.500\t0.480\t1.04\t2.000\t2.580\t0.78\n")
    out = run([sys.executable, os.path.join(ctx.source, "scripts", "collective_bars.py"), tmp]).stdout
    for line in ("| 8 B | 8.00 | 4.00 | 5.00 | 0.50 | 0.62 | 0 |", "| 1 KB | 8.00 | 4.00 | - | 0.50 | - | 0 |",
                 "Worst ratio: one-shot 0.50 (met); push 0.62 (**not met**, not measured at every size); "
                 "the faster of the two at each size: 0.50: met.",
                 "| 8 B | 4.00 | 6.00 | 20.00 | 8.00 | 5.00 | 4.16 | oneshot | 1.040 |",
                 "| 1 GB | - | - | 3000.00 | 2900.00 | - | 2900.00 | native | 1.000 |",
                 "Worst auto / best 1.100 at 1 KB: **not met**.",
                 "| 64 MB | 100.0 | 95.0 | 0.950 |", "Worst ratio 0.950: met.",
                 "| 64 MB | 100.0 | 85.0 | 0.850 |", "Worst ratio 0.850: **not met**.",
                 "| small_dp2 | 0.500 | 0.480 | 1.04 |"):
        expect(line in out, f"collective_bars.py output lacks {line!r}:\n{out}")


def test_check_plan(ctx, tmp):
    """scripts/check_plan.sh on the CPU (--tiny): a plan and a traced 2-rank run per layout, one TSV row each."""
    out = os.path.join(tmp, "plan")
    run(["bash", os.path.join(ctx.source, "scripts", "check_plan.sh"), "--device", "cpu", "--tiny", "--steps", "4",
         "--runs", "small_dp2 small_tp2", "--out", out, "--bin", ctx.nanodist])
    with open(os.path.join(out, "plan_vs_measured.tsv")) as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    expect(rows[0][0] == "run" and [r[0] for r in rows[1:]] == ["small_dp2", "small_tp2"], f"rows: {rows}")
    for r in rows[1:]:
        values = [float(v) for v in r[1:]]
        expect(values[0] > 0 and values[1] > 0 and values[3] > 0 and values[4] > 0, f"empty figures in {r}")
        expect(abs(values[2] - round(values[0] / values[1], 2)) < 0.011, f"exposed ratio of {r}")


def test_plan_fits(ctx, tmp):
    """scripts/plan_fits.sh on the CPU: every unloaded sweep fitted into the table (a 10-field row per
    piece), and check_plan.sh run with that table."""
    out = os.path.join(tmp, "pf")
    r = run(["bash", os.path.join(ctx.source, "scripts", "plan_fits.sh"), "--device", "cpu", "--iters", "2",
             "--out", out, "--bin", ctx.nanodist])
    expect("FAILED" not in r.stdout, f"a step failed:\n{r.stdout}")
    with open(os.path.join(out, "fits_2gpu.csv")) as f:
        rows = [line.rstrip("\n").split(",") for line in f if not line.startswith("op,")]
    expect(all(len(row) == 10 for row in rows), f"fit rows: {rows}")
    pairs = {(row[0], row[1]) for row in rows}
    expect(pairs == {(op, impl) for op in ("allreduce", "reducescatter", "allgather") for impl in ("native", "ring")},
           f"fitted pairs: {sorted(pairs)}")
    with open(os.path.join(out, "plan", "plan_vs_measured.tsv")) as f:
        expect(len(f.read().splitlines()) == 3, "plan_vs_measured.tsv rows")


def test_gpu_collectives(ctx, tmp):
    """scripts/gpu_collectives.sh on the CPU (--device cpu, the bars' steps only): every step runs, the
    compare CSV holds each implementation, and bars.md has the auto and the plan tables. Its compare
    runs on the lab's binary: skipped where the build has no lab (NANODIST_LAB=OFF)."""
    if not os.path.exists(os.path.join(os.path.dirname(ctx.nanodist), "nanodist-lab")):
        print("SKIP: needs nanodist-lab (configure with -DNANODIST_LAB=ON)")
        sys.exit(SKIP)
    out = os.path.join(tmp, "gc")
    r = run(["bash", os.path.join(ctx.source, "scripts", "gpu_collectives.sh"), "--device", "cpu", "--budget", "0",
             "--iters", "2", "--warmup", "1", "--out", out, "--bin", ctx.nanodist])
    expect("FAILED" not in r.stdout, f"a step failed:\n{r.stdout}")
    expect("skipped: over the 0 s budget" in r.stdout, f"the optional steps were not skipped:\n{r.stdout}")
    with open(os.path.join(out, "allreduce_compare_eager_2gpu_f32.csv")) as f:
        impls = {line.split(",")[1] for line in f.readlines()[1:]}
    expect(impls == {"ring", "native", "auto"}, f"compare rows on the CPU (no peer memory): {impls}")
    with open(os.path.join(out, "bars.md")) as f:
        bars = f.read()
    for heading in ("### auto vs the best of one-shot, two-shot, ring, NCCL, push, eager",
                    "### nanodist plan vs measured steps"):
        expect(heading in bars, f"bars.md lacks {heading!r}:\n{bars}")
    for name in ("fits_2gpu.csv", "reducescatter_ring_2gpu_f32.csv", "allgather_native_2gpu_f32.csv",
                 "fits/allreduce_native_2gpu_f32.csv", "provenance.txt", "plan_vs_measured.tsv"):
        expect(os.path.isfile(os.path.join(out, name)), f"{name} was not written")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case", choices=["plot_run", "plot_bandwidth", "export_hf", "corpus_words", "collective_bars",
                                         "check_plan", "plan_fits", "gpu_collectives"])
    parser.add_argument("--source", required=True)
    parser.add_argument("--nanodist", required=True)
    ctx = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nd_script_smoke_") as tmp:
        try:
            globals()["test_" + ctx.case](ctx, tmp)
        except Failure as e:
            print(f"FAILED: {e}")
            return 1
    print("passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
