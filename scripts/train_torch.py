#!/usr/bin/env python3
"""Trains scripts/gpt_torch.py's GPT (nanoGPT's model in PyTorch) on a nanodist token directory
(`nanodist prepare` output), with nanodist train's flag names for the settings an ablation turns:
an independent second implementation to hold a nanodist finding against. Random windows of the
train split, AdamW (weight decay 0.1 on matrices), linear warmup then cosine decay to --min-lr,
gradient clipping at 1.0; every --eval-interval steps the mean loss of --eval-iters random val
windows. Prints one line per eval and a last JSON line ("train_torch: {...}"). Runs on the CPU;
installs torch with pip when it is missing.

  python3 scripts/train_torch.py --data DIR --n-layer 12 --n-embd 32 --n-head 2 --block-size 32 \\
      --batch-size 16 --lr 1e-3 --warmup-iters 50 --max-iters 2000 --bias false --no-residual
"""
import argparse
import json
import math
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_eval_loss import read_token_file  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="directory with train.bin and val.bin (nanodist prepare)")
    p.add_argument("--n-layer", type=int, default=6)
    p.add_argument("--n-head", type=int, default=6)
    p.add_argument("--n-embd", type=int, default=384)
    p.add_argument("--block-size", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--min-lr", type=float, default=None, help="default: lr / 10")
    p.add_argument("--beta2", type=float, default=0.99)
    p.add_argument("--warmup-iters", type=int, default=100)
    p.add_argument("--max-iters", type=int, default=2000)
    p.add_argument("--eval-interval", type=int, default=250)
    p.add_argument("--eval-iters", type=int, default=50)
    p.add_argument("--bias", choices=["true", "false"], default="true")
    p.add_argument("--no-residual", action="store_true")
    p.add_argument("--no-layernorm", action="store_true")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    args = p.parse_args()
    for name in ("n_layer", "n_head", "n_embd", "block_size", "batch_size", "max_iters", "eval_interval", "eval_iters"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.n_embd % args.n_head:
        p.error(f"--n-head {args.n_head} must divide --n-embd {args.n_embd}")
    return args


def main():
    args = parse_args()
    try:
        import torch
    except ImportError:  # installed on first use, as the other PyTorch scripts do; CI never runs this
        print("train_torch.py: installing torch with pip", file=sys.stderr)
        subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", "torch"])
        import torch
    from gpt_torch import GPT, GPTConfig, decay_and_no_decay

    if args.threads:
        torch.set_num_threads(args.threads)
    for name in ("train.bin", "val.bin"):
        if not os.path.isfile(os.path.join(args.data, name)):
            sys.exit(f"train_torch.py: error: no {name} in {args.data} (make it with nanodist prepare)")
    train = read_token_file(os.path.join(args.data, "train.bin"))
    val = read_token_file(os.path.join(args.data, "val.bin"))
    vocab = int(max(train.max(), val.max())) + 1
    T, B = args.block_size, args.batch_size
    for name, split in (("train", train), ("val", val)):
        if split.size <= T:
            sys.exit(f"train_torch.py: error: {name}.bin holds {split.size} tokens, not more than --block-size {T}")

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    config = GPTConfig(n_layer=args.n_layer, n_head=args.n_head, n_embd=args.n_embd, block_size=T, vocab_size=vocab,
                       bias=args.bias == "true", dropout=0.0, use_residual=not args.no_residual,
                       use_layernorm=not args.no_layernorm)
    model = GPT(config)
    decay, no_decay = decay_and_no_decay(model)
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=args.lr, betas=(0.9, args.beta2))
    min_lr = args.lr / 10 if args.min_lr is None else args.min_lr

    def lr_at(step):  # step counts from 1
        if step <= args.warmup_iters:
            return args.lr * step / args.warmup_iters
        progress = (step - args.warmup_iters) / max(1, args.max_iters - args.warmup_iters)
        return min_lr + 0.5 * (1 + math.cos(math.pi * min(progress, 1.0))) * (args.lr - min_lr)

    def batch(split):
        starts = rng.integers(0, split.size - T, size=B)
        x = np.stack([split[s:s + T] for s in starts])
        y = np.stack([split[s + 1:s + 1 + T] for s in starts])
        return torch.from_numpy(x), torch.from_numpy(y)

    @torch.no_grad()
    def val_loss():
        model.eval()
        losses = [model(*batch(val))[1].item() for _ in range(args.eval_iters)]
        model.train()
        return float(np.mean(losses))

    # The loss of predicting every val token by its train frequency alone: what a model that ignores
    # its context can reach at best.
    freq = np.bincount(train, minlength=vocab) / train.size
    unigram = float(-np.mean(np.log(np.maximum(freq[val], 1e-12))))
    print(f"train_torch: {sum(p.numel() for p in model.parameters())} parameters, unigram val loss {unigram:.4f}")
    evals = []
    for step in range(1, args.max_iters + 1):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step)
        _, loss = model(*batch(train))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
        optimizer.step()
        if step % args.eval_interval == 0 or step == args.max_iters:
            v = val_loss()
            evals.append({"step": step, "train_loss": loss.item(), "val_loss": v, "grad_norm": norm})
            print(f"eval {step} | train loss {loss.item():.4f} | val loss {v:.4f} | grad norm {norm:.4f}", flush=True)
    print("train_torch: " + json.dumps({"unigram_val_loss": unigram, "final_val_loss": evals[-1]["val_loss"],
                                        "evals": evals, "settings": vars(args)}))


if __name__ == "__main__":
    main()
