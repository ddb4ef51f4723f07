#!/usr/bin/env python3
"""Exports a nanodist checkpoint as a Hugging Face GPT-2 model directory that
transformers.GPT2LMHeadModel.from_pretrained(OUT) loads:

  OUT/config.json          GPT2Config (n_layer, n_head, n_embd, n_positions = block size, the real
                           vocabulary size, gelu_new = GELU tanh, LayerNorm eps 1e-5, tied embeddings)
  OUT/model.safetensors    the weights under GPT-2's names, f32
  OUT/vocab.json, merges.txt, tokenizer_config.json
                           the char or BPE tokenizer as a GPT-2 tokenizer (see hf_gpt2_tokenizer.py)
  OUT/nanodist_tokenizer.txt  the checkpoint's own tokenizer file, verbatim
  OUT/README.md            what was exported and how to load it

What changes on the way: nanodist's Linear keeps weight as (out, in), GPT-2's Conv1D as (in, out),
so c_attn, c_proj and c_fc weights are transposed; the padded vocabulary rows of a GPU run are
dropped; lm_head is tied to wte on both sides, so it is not stored; GPT-2 always has biases, so a
--bias false model gets zero biases (the same function). A --no-layernorm or --no-residual model
is no GPT-2 and is refused.

  python3 scripts/export_hf.py out/ hf_model/              (a directory: its newest checkpoint)
  python3 scripts/export_hf.py out/ckpt_005000.h5 hf_model/ --check
--check then loads OUT with transformers and compares its logits with scripts/gpt_torch.py's GPT
run on the checkpoint (and, with a tokenizer, the two tokenizers' ids on a sample text).
Packages missing are installed with pip (numpy h5py safetensors; torch transformers for --check)
unless --no-install is given.
"""
import argparse
import importlib
import importlib.util
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

EXPORT_PACKAGES = ["numpy", "h5py", "safetensors"]
CHECK_PACKAGES = ["torch", "transformers"]
LOGITS_TOLERANCE = 1e-4  # f32 on both sides; the two differ only in summation order


def fail(message):
    sys.exit(f"export_hf.py: error: {message}")


def ensure_packages(names, install):
    missing = [n for n in names if importlib.util.find_spec(n) is None]
    if not missing:
        return
    if not install:
        fail(f"needs {' '.join(missing)} (pip install {' '.join(missing)})")
    who = "as root, into the system's Python " if os.geteuid() == 0 else "into "
    print(f"export_hf.py: installing {' '.join(missing)} with pip {who}({sys.prefix}); pass --no-install to fail "
          "instead", file=sys.stderr)
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", *missing])
    importlib.invalidate_caches()


def gpt2_state_dict(config, params, real_vocab):
    """nanodist parameter arrays -> {GPT-2 name: array} (see the module docstring)."""
    import numpy as np

    C, L = config["n_embd"], config["n_layer"]
    taken = set()

    def take(name, shape_if_absent=None):
        if name in params:
            taken.add(name)
            return params[name]
        if shape_if_absent is None:
            fail(f"the checkpoint has no parameter {name}")
        return np.zeros(shape_if_absent, dtype=np.float32)  # bias=false: GPT-2's bias is 0

    def conv1d(prefix, n_out):
        weight = take(prefix + ".weight")
        if weight.shape[0] != n_out:
            fail(f"{prefix}.weight has shape {weight.shape}, expected ({n_out}, in)")
        return {prefix + ".weight": np.ascontiguousarray(weight.T), prefix + ".bias": take(prefix + ".bias", (n_out,))}

    def layernorm(prefix):
        return {prefix + ".weight": take(prefix + ".weight"), prefix + ".bias": take(prefix + ".bias", (C,))}

    out = {
        "transformer.wte.weight": np.ascontiguousarray(take("transformer.wte.weight")[:real_vocab]),
        "transformer.wpe.weight": take("transformer.wpe.weight"),
    }
    for i in range(L):
        h = f"transformer.h.{i}"
        out.update(layernorm(h + ".ln_1"))
        out.update(conv1d(h + ".attn.c_attn", 3 * C))
        out.update(conv1d(h + ".attn.c_proj", C))
        out.update(layernorm(h + ".ln_2"))
        out.update(conv1d(h + ".mlp.c_fc", 4 * C))
        out.update(conv1d(h + ".mlp.c_proj", C))
    out.update(layernorm("transformer.ln_f"))
    left = sorted(set(params) - taken)
    if left:
        fail(f"the checkpoint has parameters GPT-2 has no place for: {left}")
    return out


def gpt2_config(config, real_vocab, has_tokenizer):
    # llm.c GPT-2 data (no nanodist tokenizer, 50257 ids) keeps GPT-2's <|endoftext|> = 50256.
    eos = 50256 if (not has_tokenizer and real_vocab == 50257) else None
    return {
        "architectures": ["GPT2LMHeadModel"],
        "model_type": "gpt2",
        "vocab_size": real_vocab,
        "n_positions": config["block_size"],
        "n_ctx": config["block_size"],
        "n_embd": config["n_embd"],
        "n_layer": config["n_layer"],
        "n_head": config["n_head"],
        "n_inner": None,  # 4 * n_embd
        "activation_function": "gelu_new",  # the tanh approximation nanodist uses
        "layer_norm_epsilon": 1e-5,
        "resid_pdrop": config["dropout"],
        "embd_pdrop": config["dropout"],
        "attn_pdrop": config["dropout"],
        "initializer_range": 0.02,
        "scale_attn_weights": True,
        "scale_attn_by_inverse_layer_idx": False,
        "reorder_and_upcast_attn": False,
        "tie_word_embeddings": True,
        "bos_token_id": eos,
        "eos_token_id": eos,
        "torch_dtype": "float32",
    }


def export(ckpt_path, out_dir):
    from safetensors.numpy import save_file

    from hf_gpt2_tokenizer import write_gpt2_tokenizer
    from nanodist_ckpt import CheckpointError, read_checkpoint, resolve

    try:
        path = resolve(ckpt_path)
        config, params, tokenizer_text, real_vocab = read_checkpoint(path)
    except CheckpointError as e:
        fail(str(e))
    if not config["use_layernorm"]:
        fail(f"{path} was trained with --no-layernorm: GPT-2 has LayerNorm in every block, so this model has "
             "no GPT-2 form")
    if not config["use_residual"]:
        fail(f"{path} was trained with --no-residual: GPT-2 has residual connections, so this model has no "
             "GPT-2 form")
    tensors = gpt2_state_dict(config, params, real_vocab)
    os.makedirs(out_dir, exist_ok=True)
    save_file(tensors, os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(gpt2_config(config, real_vocab, tokenizer_text is not None), f, indent=2)

    if tokenizer_text is None:
        tokenizer_note = ("no tokenizer: the run trained on token files without a nanodist tokenizer (llm.c shards "
                          "or nanoGPT .bin); use the tokenizer those files were made with (GPT-2's for llm.c GPT-2 "
                          "shards: AutoTokenizer.from_pretrained('gpt2')).")
    else:
        with open(os.path.join(out_dir, "nanodist_tokenizer.txt"), "w", encoding="utf-8") as f:
            f.write(tokenizer_text)
        try:
            tokenizer_note = write_gpt2_tokenizer(tokenizer_text, out_dir, config["block_size"])
        except ValueError as e:
            tokenizer_note = (f"no Hugging Face tokenizer ({e}); nanodist_tokenizer.txt loads with "
                              "scripts/nanodist_tokenizer.py's load_tokenizer(open(...).read()).")
    n_params = sum(int(t.size) for t in tensors.values())
    dropped = config["vocab_size"] - real_vocab
    readme = f"""# GPT-2 export of a nanodist checkpoint

Source: `{os.path.abspath(path)}`
Model: {config['n_layer']} layers, {config['n_head']} heads, width {config['n_embd']}, context {config['block_size']},
vocabulary {real_vocab}{f' ({dropped} padding rows dropped)' if dropped else ''}, {n_params} parameters{'' if config['bias'] else ' (trained without biases: biases are zeros)'}.
Tokenizer: {tokenizer_note}

```python
from transformers import AutoTokenizer, GPT2LMHeadModel
model = GPT2LMHeadModel.from_pretrained("{out_dir}")
tokenizer = AutoTokenizer.from_pretrained("{out_dir}")   # when vocab.json is here
ids = tokenizer("some text", return_tensors="pt").input_ids
print(tokenizer.decode(model.generate(ids, max_new_tokens=50, do_sample=True)[0]))
```
"""
    with open(os.path.join(out_dir, "README.md"), "w") as f:
        f.write(readme)
    print(f"wrote {out_dir}: {n_params} parameters, vocabulary {real_vocab}; {tokenizer_note}")
    return path


def check(ckpt_path, out_dir, seed=0):
    """Logits of transformers' GPT2LMHeadModel on OUT against gpt_torch.py's GPT on the checkpoint,
    and the tokenizers' ids on a sample text. Exits non-zero past LOGITS_TOLERANCE or on a mismatch."""
    import torch
    from transformers import GPT2LMHeadModel

    from ckpt_to_torch import build_model, read_checkpoint

    config, params, tokenizer_text, real_vocab = read_checkpoint(ckpt_path)
    reference = build_model(config, params)
    hf = GPT2LMHeadModel.from_pretrained(out_dir).eval()
    generator = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, real_vocab, (2, config.block_size), generator=generator)
    with torch.no_grad():
        expected = reference(idx)[0][..., :real_vocab]
        got = hf(idx).logits
    diff = (got - expected).abs().max().item()
    print(f"check: logits of {tuple(got.shape)}: max |transformers - gpt_torch| = {diff:.3e} "
          f"(tolerance {LOGITS_TOLERANCE:g})")
    if not diff <= LOGITS_TOLERANCE:
        fail(f"the exported model's logits differ from the checkpoint's by {diff:.3e}")
    if tokenizer_text is not None and os.path.exists(os.path.join(out_dir, "vocab.json")):
        check_tokenizer(tokenizer_text, out_dir, seed)


def check_tokenizer(tokenizer_text, out_dir, seed=0):
    """Both Hugging Face tokenizers (slow and fast) give nanodist's ids on an ASCII sample text
    drawn from the vocabulary, and decode them back to it."""
    import random

    from transformers import GPT2Tokenizer, GPT2TokenizerFast

    from nanodist_tokenizer import load_tokenizer

    ours = load_tokenizer(tokenizer_text)
    pieces = [ours.decode_bytes([i]) for i in range(ours.vocab_size)]
    ascii_ids = [i for i, p in enumerate(pieces) if all(32 <= b < 127 or b in (9, 10) for b in p)]
    if not ascii_ids:
        print("check: tokenizer has no ASCII tokens to sample text from; skipped")
        return
    rng = random.Random(seed)
    text = ours.decode_bytes([rng.choice(ascii_ids) for _ in range(300)]).decode("ascii")
    expected = ours.encode(text)
    for cls in (GPT2Tokenizer, GPT2TokenizerFast):
        hf = cls.from_pretrained(out_dir, model_max_length=1 << 30)  # the sample is longer than the context
        got = hf(text)["input_ids"]
        if got != expected:
            first = next((k for k, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
            fail(f"{cls.__name__} encodes the sample text differently from nanodist at token {first} "
                 f"({got[first:first + 5]} vs {expected[first:first + 5]})")
        if hf.decode(got) != text:
            fail(f"{cls.__name__} does not decode the sample text back")
    print(f"check: tokenizer: {len(expected)} ids of a {len(text)}-character sample agree (slow and fast)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ckpt", help="checkpoint .h5, or a run directory (its newest checkpoint)")
    parser.add_argument("out", help="directory to write (created)")
    parser.add_argument("--check", action="store_true", help="load OUT with transformers and compare logits")
    parser.add_argument("--tokenizer-check-only", action="store_true",
                        help="with --check: compare only the tokenizers (needs transformers, not torch)")
    parser.add_argument("--no-install", action="store_true", help="fail instead of pip-installing what is missing")
    args = parser.parse_args()

    ensure_packages(EXPORT_PACKAGES, not args.no_install)
    path = export(args.ckpt, args.out)
    if args.check and args.tokenizer_check_only:
        ensure_packages(["transformers"], not args.no_install)
        from nanodist_ckpt import read_checkpoint

        tokenizer_text = read_checkpoint(path)[2]
        if tokenizer_text is not None and os.path.exists(os.path.join(args.out, "vocab.json")):
            check_tokenizer(tokenizer_text, args.out)
    elif args.check:
        ensure_packages(CHECK_PACKAGES, not args.no_install)
        check(path, args.out)


if __name__ == "__main__":
    main()
