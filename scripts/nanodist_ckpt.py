"""Reading a nanodist checkpoint with h5py and numpy only (no torch): /config attributes,
/params/<name> (f32, full shapes, nanodist = gpt_torch.py names, Linear weights (out, in)),
/tokenizer (the tokenizer file's text; empty for runs on llm.c or nanoGPT token files).
Shared by ckpt_to_torch.py and export_hf.py.
"""
import glob
import os
import re

import h5py
import numpy as np


class CheckpointError(Exception):
    pass


def newest_checkpoint(directory):
    """The complete checkpoint (ckpt_<step>.h5; temporaries have other names) of highest step."""
    steps = {}
    for path in glob.glob(os.path.join(directory, "ckpt_*.h5")):
        match = re.fullmatch(r"ckpt_(\d+)\.h5", os.path.basename(path))
        if match:
            steps[int(match.group(1))] = path
    if not steps:
        raise CheckpointError(f"no checkpoint ckpt_<step>.h5 in {directory}")
    return steps[max(steps)]


def resolve(path):
    """A checkpoint file, or a directory's newest checkpoint."""
    if os.path.isdir(path):
        return newest_checkpoint(path)
    if not os.path.isfile(path):
        raise CheckpointError(f"no checkpoint file {path}")
    return path


def attr(group, name, default=None):
    if name in group.attrs:
        value = group.attrs[name]
        return value.decode() if isinstance(value, bytes) else value
    if default is None:
        raise CheckpointError(f"checkpoint has no /config attribute {name!r}")
    return default


def as_bool(value):
    if isinstance(value, str):
        return value.lower() in ("1", "true", "yes", "on")
    return bool(value)


def read_checkpoint(path):
    """-> (config dict with gpt_torch.GPTConfig's fields, {name: float32 array}, tokenizer text or
    None, number of real vocabulary rows). config["vocab_size"] counts the rows of wte, padding
    included; the real vocabulary is the first `real_vocab` rows."""
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise CheckpointError(f"cannot read {path} as HDF5: {e}") from None
    with f:
        if "params" not in f or "config" not in f:
            raise CheckpointError(f"{path} is not a nanodist checkpoint (no /params or /config)")
        params = {name: np.asarray(ds[()], dtype=np.float32) for name, ds in f["params"].items()}
        cfg = f["config"]
        wte = params["transformer.wte.weight"]
        vocab_rows, n_embd = wte.shape  # rows include any padding of the vocabulary
        config = dict(
            n_layer=int(attr(cfg, "n_layer")),
            n_head=int(attr(cfg, "n_head")),
            n_embd=int(n_embd),
            block_size=int(params["transformer.wpe.weight"].shape[0]),
            vocab_size=int(vocab_rows),
            bias=as_bool(attr(cfg, "bias", "transformer.ln_f.bias" in params or "transformer.h.0.attn.c_attn.bias" in params)),
            dropout=float(attr(cfg, "dropout", 0.0)),
            use_layernorm=as_bool(attr(cfg, "use_layernorm", "transformer.h.0.ln_1.weight" in params)),
            use_residual=as_bool(attr(cfg, "use_residual", True)),
        )
        real_vocab = int(attr(cfg, "vocab_size", vocab_rows))
        tokenizer_text = None
        if "tokenizer" in f:
            raw = f["tokenizer"][()]
            tokenizer_text = (raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)) or None
    return config, params, tokenizer_text, real_vocab
