#!/usr/bin/env python3
"""Mean loss of a Hugging Face GPT-2 directory (scripts/export_hf.py's output) over a nanodist token
file, cut into the windows `nanodist eval` scores: the file's n tokens give n - 1 (input, next token)
pairs, in consecutive windows of n_positions inputs and one shorter last window for the rest, every
target counted once. With --expect JSON (the line `nanodist eval --json` printed over the same
file and --max-tokens) it compares the two losses and fails past --tolerance: the exported model
scores the tokens as nanodist does.

  python3 scripts/hf_eval_loss.py hf_model/ data/val.bin [--max-tokens N] [--expect eval.json]
"""
import argparse
import json
import sys

import numpy as np

TOKEN_FILE_MAGIC = 0x4B54444E  # "NDTK", data/token_file.h
HEADER_INTS = 256


def fail(message):
    sys.exit(f"hf_eval_loss.py: error: {message}")


def read_token_file(path):
    """Tokens of a nanodist .bin: 256 int32 header (magic, version, vocab, width, count), then tokens."""
    with open(path, "rb") as f:
        header = np.frombuffer(f.read(4 * HEADER_INTS), dtype="<i4")
        if header.size != HEADER_INTS or header[0] != TOKEN_FILE_MAGIC:
            fail(f"{path} is not a nanodist token file")
        width, count = int(header[3]), int(header[4])
        tokens = np.frombuffer(f.read(), dtype="<u2" if width == 2 else "<i4")
    if tokens.size != count:
        fail(f"{path} holds {tokens.size} tokens, its header says {count}")
    return tokens.astype(np.int64)


def mean_loss(model, tokens, block_size, max_tokens, device):
    """Sum of next-token cross-entropies over the windows above, divided by the pairs scored."""
    import torch
    import torch.nn.functional as F

    pairs = len(tokens) - 1 if max_tokens <= 0 else min(max_tokens, len(tokens) - 1)
    ids = torch.from_numpy(tokens[: pairs + 1])
    total = 0.0
    with torch.no_grad():
        for start in range(0, pairs, block_size):
            length = min(block_size, pairs - start)
            x = ids[start : start + length].unsqueeze(0).to(device)
            y = ids[start + 1 : start + 1 + length].to(device)
            logits = model(x).logits[0].float()
            total += F.cross_entropy(logits, y, reduction="sum").item()
    return total / pairs, pairs


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="directory written by scripts/export_hf.py")
    parser.add_argument("tokens", help="a nanodist token file, e.g. DATA/val.bin")
    parser.add_argument("--max-tokens", type=int, default=0, help="score the first N targets (0 = all)")
    parser.add_argument("--expect", help="a file holding `nanodist eval --json` output over the same tokens")
    parser.add_argument("--tolerance", type=float, default=1e-4, help="largest |difference| of mean losses")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    from transformers import GPT2LMHeadModel

    model = GPT2LMHeadModel.from_pretrained(args.model).to(args.device).eval()
    tokens = read_token_file(args.tokens)
    loss, pairs = mean_loss(model, tokens, model.config.n_positions, args.max_tokens, args.device)
    print(f"transformers: tokens {pairs}, loss {loss:.6f}")
    if args.expect:
        with open(args.expect) as f:
            expected = json.loads(f.read().strip().splitlines()[-1])
        if expected["tokens"] != pairs:
            fail(f"nanodist eval scored {expected['tokens']} tokens, this {pairs}: not the same tokens")
        diff = abs(loss - expected["loss"])
        print(f"nanodist eval: tokens {expected['tokens']}, loss {expected['loss']:.6f}; "
              f"|transformers - nanodist| = {diff:.2e} (tolerance {args.tolerance:g})")
        if not diff <= args.tolerance:
            fail(f"the exported model's loss differs from nanodist's by {diff:.2e}")


if __name__ == "__main__":
    main()
