"""Writes tests/golden/gpt_tiny.h5: PyTorch's answers for a tiny GPT, checked by tests/nn/golden_test.cpp.

Recipe (everything computed in float64 with scripts/gpt_torch.py; stored as float64 unless noted):
  model   n_layer 2, n_head 4, n_embd 32, vocab_size 37, block_size 16, bias, dropout 0,
          LayerNorm and residuals on (the /config attributes). Batch B=4, T=16.
  params  numpy default_rng(SEED), drawn in named_parameters() order, so none is trivial:
          weights N(0, 0.02) (c_proj weights N(0, 0.02/sqrt(2 n_layer))), biases N(0, 0.02),
          LayerNorm weight 1 + N(0, 0.1), LayerNorm bias N(0, 0.02). wte and wpe are drawn with
          INIT_STD_EMBED (larger, so the first gradients exceed the clip norm).
  inputs  (B,T) int32 uniform over the vocabulary; targets (B,T) int32 likewise, with
          IGNORED_TARGETS positions set to -1 (ignored by the loss).
  forward logits (B,T,V); loss = mean cross-entropy over targets != -1; grads of every parameter.
  train   10 steps on the same batch; step `it` (0-based):
            lr(it) = max_lr*(it+1)/(warmup_iters+1)                      if it < warmup_iters
                   = min_lr                                              if it > lr_decay_iters
                   = min_lr + 0.5*(1+cos(pi*r))*(max_lr-min_lr),  r = (it-warmup_iters)/(lr_decay_iters-warmup_iters)
            zero grads; loss_it = forward (recorded BEFORE the update, so losses[0] == /loss);
            backward; norm_it = global L2 norm of all grads (recorded before clipping);
            clip: grads *= min(1, grad_clip/(norm_it + 1e-6))  (torch.nn.utils.clip_grad_norm_);
            torch.optim.AdamW step: p *= 1 - lr*wd (wd = weight_decay for dim >= 2, else 0);
            m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
            p -= lr * (m/(1-b1^t)) / (sqrt(v/(1-b2^t)) + eps),  t = it+1.
          Stored: /train/losses, /train/lrs, /train/norms (10 each), /train/final_params/<name>
          (after the 10th update), hyper-parameters as /train attributes.
Run: python3 scripts/make_golden.py [--out tests/golden/gpt_tiny.h5]   (needs torch, h5py, numpy)
"""
import argparse
import math
import os
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_torch import GPT, GPTConfig, decay_and_no_decay  # noqa: E402

SEED = 1337
B, T = 4, 16
INIT_STD = 0.02
INIT_STD_EMBED = 0.1
IGNORED_TARGETS = [(0, 3), (1, 0), (2, 15), (3, 7), (3, 8)]
TRAIN = dict(steps=10, max_lr=1e-2, min_lr=1e-3, warmup_iters=3, lr_decay_iters=10,
             beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.1, grad_clip=1.0)


def lr_at(it, max_lr, min_lr, warmup_iters, lr_decay_iters):
    if it < warmup_iters:
        return max_lr * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (max_lr - min_lr)


def draw_parameters(model, rng):
    proj_std = INIT_STD / math.sqrt(2 * model.config.n_layer)
    values = {}
    for name, p in model.named_parameters():
        shape = tuple(p.shape)
        if name in ("transformer.wte.weight", "transformer.wpe.weight"):
            value = rng.normal(0.0, INIT_STD_EMBED, shape)
        elif ".ln_" in name and name.endswith(".weight"):
            value = 1.0 + rng.normal(0.0, 0.1, shape)
        elif name.endswith("c_proj.weight"):
            value = rng.normal(0.0, proj_std, shape)
        else:  # other weights and every bias (LayerNorm's included)
            value = rng.normal(0.0, INIT_STD, shape)
        values[name] = value
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy(values[name]))


def train_steps(model, idx, targets):
    cfg = TRAIN
    decay, no_decay = decay_and_no_decay(model)
    optimizer = torch.optim.AdamW(
        [dict(params=decay, weight_decay=cfg["weight_decay"]), dict(params=no_decay, weight_decay=0.0)],
        lr=cfg["max_lr"], betas=(cfg["beta1"], cfg["beta2"]), eps=cfg["eps"], foreach=False)
    losses, lrs, norms = [], [], []
    for it in range(cfg["steps"]):
        lr = lr_at(it, cfg["max_lr"], cfg["min_lr"], cfg["warmup_iters"], cfg["lr_decay_iters"])
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad(set_to_none=True)
        _, loss = model(idx, targets)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg["grad_clip"])
        optimizer.step()
        losses.append(loss.item())
        lrs.append(lr)
        norms.append(norm.item())
    return losses, lrs, norms


def train_steps_by_formula(model, idx, targets):
    """The header's recipe written out by hand: proves that it is what torch.optim.AdamW and
    clip_grad_norm_ do, so an implementation can follow the text."""
    cfg = TRAIN
    params = list(model.parameters())
    m = [torch.zeros_like(p) for p in params]
    v = [torch.zeros_like(p) for p in params]
    losses = []
    for it in range(cfg["steps"]):
        lr = lr_at(it, cfg["max_lr"], cfg["min_lr"], cfg["warmup_iters"], cfg["lr_decay_iters"])
        model.zero_grad(set_to_none=True)
        _, loss = model(idx, targets)
        loss.backward()
        losses.append(loss.item())
        with torch.no_grad():
            norm = math.sqrt(sum(float((p.grad ** 2).sum()) for p in params))
            scale = min(1.0, cfg["grad_clip"] / (norm + 1e-6))
            t = it + 1
            for p, mi, vi in zip(params, m, v):
                g = p.grad * scale
                wd = cfg["weight_decay"] if p.dim() >= 2 else 0.0
                p.mul_(1.0 - lr * wd)
                mi.mul_(cfg["beta1"]).add_((1 - cfg["beta1"]) * g)
                vi.mul_(cfg["beta2"]).add_((1 - cfg["beta2"]) * g * g)
                m_hat = mi / (1 - cfg["beta1"] ** t)
                v_hat = vi / (1 - cfg["beta2"] ** t)
                p.sub_(lr * m_hat / (v_hat.sqrt() + cfg["eps"]))
    return losses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--out", default=os.path.join(here, "..", "tests", "golden", "gpt_tiny.h5"))
    args = parser.parse_args()

    torch.manual_seed(SEED)
    config = GPTConfig(n_layer=2, n_head=4, n_embd=32, block_size=16, vocab_size=37, bias=True,
                       dropout=0.0, use_layernorm=True, use_residual=True)
    model = GPT(config).double()
    rng = np.random.default_rng(SEED)
    draw_parameters(model, rng)
    initial = {name: p.detach().clone().numpy() for name, p in model.named_parameters()}

    inputs = rng.integers(0, config.vocab_size, size=(B, T)).astype(np.int32)
    targets = rng.integers(0, config.vocab_size, size=(B, T)).astype(np.int32)
    for b, t in IGNORED_TARGETS:
        targets[b, t] = -1
    idx_t = torch.from_numpy(inputs).long()
    tgt_t = torch.from_numpy(targets).long()

    logits, loss = model(idx_t, tgt_t)
    loss.backward()
    grads = {name: p.grad.detach().clone().numpy() for name, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)

    by_formula = GPT(config).double()
    by_formula.load_state_dict(model.state_dict())
    losses, lrs, norms = train_steps(model, idx_t, tgt_t)
    formula_losses = train_steps_by_formula(by_formula, idx_t, tgt_t)
    assert max(abs(a - b) for a, b in zip(losses, formula_losses)) < 1e-10, "the header's recipe must be torch's"
    for p, q in zip(model.parameters(), by_formula.parameters()):
        assert torch.allclose(p, q, rtol=1e-10, atol=1e-12), "the header's recipe must be torch's"
    assert abs(losses[0] - loss.item()) < 1e-12, "step 0 must see the initial weights"
    clipped = sum(n > TRAIN["grad_clip"] for n in norms)
    assert 0 < clipped < len(norms), f"clipping should trigger in some steps, not all: norms {norms}"

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with h5py.File(args.out, "w") as f:
        cfg = f.create_group("config")
        for key, value in dict(n_layer=config.n_layer, n_head=config.n_head, n_embd=config.n_embd,
                               vocab_size=config.vocab_size, block_size=config.block_size, B=B, T=T).items():
            cfg.attrs[key] = np.int64(value)
        cfg.attrs["bias"] = np.int64(config.bias)
        cfg.attrs["use_layernorm"] = np.int64(config.use_layernorm)
        cfg.attrs["use_residual"] = np.int64(config.use_residual)
        cfg.attrs["dropout"] = np.float64(config.dropout)
        for name, value in initial.items():
            f.create_dataset(f"params/{name}", data=value)
        for name, value in grads.items():
            f.create_dataset(f"grads/{name}", data=value)
        f.create_dataset("inputs", data=inputs)
        f.create_dataset("targets", data=targets)
        f.create_dataset("logits", data=logits.detach().numpy())
        f.create_dataset("loss", data=np.float64(loss.item()))
        train = f.create_group("train")
        for key, value in TRAIN.items():
            train.attrs[key] = np.int64(value) if key in ("steps", "warmup_iters", "lr_decay_iters") else np.float64(value)
        train.create_dataset("losses", data=np.array(losses))
        train.create_dataset("lrs", data=np.array(lrs))
        train.create_dataset("norms", data=np.array(norms))
        for name, p in model.named_parameters():
            train.create_dataset(f"final_params/{name}", data=p.detach().numpy())
    print(f"wrote {args.out}: loss {loss.item():.6f}, losses {[round(x, 4) for x in losses]}")
    print(f"norms {[round(x, 3) for x in norms]} ({clipped} of {len(norms)} steps clipped)")


if __name__ == "__main__":
    main()
