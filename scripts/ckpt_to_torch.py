"""Loads a nanodist checkpoint (HDF5: /config attributes, /params/<name> f32 full shapes, /tokenizer
the tokenizer file's text) into scripts/gpt_torch.py's GPT with h5py, and samples text from it; with
--save it also writes a PyTorch file {"config": dict, "model": state_dict} for torch.load.

  python3 scripts/ckpt_to_torch.py out/ckpt_000500.h5 --prompt "ROMEO:" --tokens 200
  python3 scripts/ckpt_to_torch.py out/ --save model.pt     (a directory: its newest checkpoint)
Needs torch, h5py, numpy (pip install torch h5py numpy); runs on the CPU. The h5py reading is in
nanodist_ckpt.py (no torch), shared with export_hf.py.
"""
import argparse
import dataclasses
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_torch import GPT, GPTConfig  # noqa: E402
from nanodist_ckpt import CheckpointError, resolve  # noqa: E402
from nanodist_ckpt import read_checkpoint as read_checkpoint_arrays  # noqa: E402
from nanodist_tokenizer import load_tokenizer  # noqa: E402


def read_checkpoint(path):
    """-> (GPTConfig, {name: float32 array}, tokenizer text or None, number of real vocabulary rows)."""
    config, params, tokenizer_text, real_vocab = read_checkpoint_arrays(path)
    config["dropout"] = 0.0  # inference
    return GPTConfig(**config), params, tokenizer_text, real_vocab


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

    try:
        path = resolve(args.ckpt)
        config, params, tokenizer_text, real_vocab = read_checkpoint(path)
    except CheckpointError as e:
        raise SystemExit(f"ckpt_to_torch: {e}")
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
        raise SystemExit("ckpt_to_torch: the checkpoint has no tokenizer to decode with (trained on llm.c or nanoGPT "
                         "token files); use --tokens 0 with --save")
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
