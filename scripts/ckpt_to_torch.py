"""Loads a nanodist checkpoint (HDF5: /config attributes, /params/<name> f32 full shapes, /tokenizer
the tokenizer file's text) into scripts/gpt_torch.py's GPT with h5py, and samples text from it; with
--save it also writes a PyTorch file {"config": dict, "model": state_dict} for torch.load.

  python3 scripts/ckpt_to_torch.py out/ckpt_000500.h5 --prompt "ROMEO:" --tokens 200
  python3 scripts/ckpt_to_torch.py out/ --save model.pt     (a directory: its newest checkpoint)
Needs torch, h5py, numpy (pip install torch h5py numpy); runs on the CPU.
"""
import argparse
import dataclasses
import glob
import os
import re
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_torch import GPT, GPTConfig  # noqa: E402
from nanodist_tokenizer import load_tokenizer  # noqa: E402


def newest_checkpoint(directory):
    """The complete checkpoint (ckpt_<step>.h5; temporaries have other names) of highest step."""
    steps = {}
    for path in glob.glob(os.path.join(directory, "ckpt_*.h5")):
        match = re.fullmatch(r"ckpt_(\d+)\.h5", os.path.basename(path))
        if match:
            steps[int(match.group(1))] = path
    if not steps:
        raise SystemExit(f"ckpt_to_torch: no checkpoint ckpt_<step>.h5 in {directory}")
    return steps[max(steps)]


def attr(group, name, default=None):
    if name in group.attrs:
        value = group.attrs[name]
        return value.decode() if isinstance(value, bytes) else value
    if default is None:
        raise SystemExit(f"ckpt_to_torch: checkpoint has no /config attribute {name!r}")
    return default


def as_bool(value):
    if isinstance(value, str):
        return value.lower() in ("1", "true", "yes", "on")
    return bool(value)


def read_checkpoint(path):
    """-> (GPTConfig, {name: float32 array}, tokenizer text, number of real vocabulary rows)."""
    with h5py.File(path, "r") as f:
        params = {name: np.asarray(ds[()], dtype=np.float32) for name, ds in f["params"].items()}
        cfg = f["config"]
        wte = params["transformer.wte.weight"]
        vocab_rows, n_embd = wte.shape  # rows include any padding of the vocabulary
        config = GPTConfig(
            n_layer=int(attr(cfg, "n_layer")),
            n_head=int(attr(cfg, "n_head")),
            n_embd=int(n_embd),
            block_size=int(params["transformer.wpe.weight"].shape[0]),
            vocab_size=int(vocab_rows),
            bias=as_bool(attr(cfg, "bias", "transformer.ln_f.bias" in params or "transformer.h.0.attn.c_attn.bias" in params)),
            dropout=0.0,
            use_layernorm=as_bool(attr(cfg, "use_layernorm", "transformer.h.0.ln_1.weight" in params)),
            use_residual=as_bool(attr(cfg, "use_residual", True)),
        )
        real_vocab = int(attr(cfg, "vocab_size", vocab_rows))
        tokenizer_text = None
        if "tokenizer" in f:
            raw = f["tokenizer"][()]
            tokenizer_text = raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
    return config, params, tokenizer_text, real_vocab


def build_model(config, params):
    model = GPT(config)
    expected = dict(model.named_parameters())
    missing = sorted(set(expected) - set(params))
    unexpected = sorted(set(params) - set(expected))
    if missing or unexpected:
        raise SystemExit(f"ckpt_to_torch: parameter names differ; missing {missing}, unexpected {unexpected}")
    with torch.no_grad():
        for name, p in expected.items():
            if tuple(p.shape) != params[name].shape:
                raise SystemExit(f"ckpt_to_torch: {name} has shape {params[name].shape}, the model expects {tuple(p.shape)}")
            p.copy_(torch.from_numpy(params[name]))
    return model.eval()


def main():
    parser = argparse.ArgumentParser(description="Load a nanodist checkpoint into PyTorch and sample from it.")
    parser.add_argument("ckpt", help="checkpoint .h5 file, or a directory (its newest checkpoint)")
    parser.add_argument("--prompt", default="\n")
    parser.add_argument("--tokens", type=int, default=200, help="tokens to sample (0: none)")
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--top-k", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--save", help="also write {'config', 'model'} here with torch.save")
    args = parser.parse_args()

    path = newest_checkpoint(args.ckpt) if os.path.isdir(args.ckpt) else args.ckpt
    config, params, tokenizer_text, real_vocab = read_checkpoint(path)
    model = build_model(config, params)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"loaded {path}: {n_params} parameters, {dataclasses.asdict(config)}, vocabulary {real_vocab}",
          file=sys.stderr)
    if args.save:
        torch.save({"config": dataclasses.asdict(config), "model": model.state_dict()}, args.save)
        print(f"wrote {args.save}", file=sys.stderr)
    if args.tokens <= 0:
        return
    if tokenizer_text is None:
        raise SystemExit("ckpt_to_torch: the checkpoint has no /tokenizer to decode with")
    tokenizer = load_tokenizer(tokenizer_text)
    if tokenizer.vocab_size > real_vocab:
        raise SystemExit(f"ckpt_to_torch: tokenizer has {tokenizer.vocab_size} tokens, the model only {real_vocab}")
    prompt_ids = tokenizer.encode(args.prompt) or [0]
    generator = torch.Generator().manual_seed(args.seed)
    idx = torch.tensor([prompt_ids], dtype=torch.long)
    out = model.generate(idx, args.tokens, temperature=args.temperature, top_k=args.top_k,
                         allowed_vocab=tokenizer.vocab_size, generator=generator)
    text = tokenizer.decode_bytes(out[0].tolist())
    sys.stdout.write(text.decode("utf-8", errors="replace") + "\n")


if __name__ == "__main__":
    main()
