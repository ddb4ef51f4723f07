"""Training speed of scripts/gpt_torch.py's GPT in PyTorch: the peer that scripts/bench_train.sh
compares nanodist against, on the same GPU and the same shapes.

Per step: a fresh batch of uniform random ids (B, T+1) on the device, forward + cross-entropy
under bf16 autocast, backward, global-norm clipping to 1.0, fused AdamW. Each step is timed
between torch.cuda.synchronize() calls; the result is the median over steps FIRST..STEPS
(1-based, so compilation and warm-up stay out). Attention uses F.scaled_dot_product_attention.
Prints one line: "bench_torch: {json}" with tok_per_s, ms, mfu (null without --peak-tflops) and, on
a GPU, the peak device memory of the run: torch.cuda.max_memory_allocated (bytes in live tensors,
what nanodist's "peak GPU memory" counts) and max_memory_reserved (what the caching allocator took).

  python3 scripts/bench_torch.py --model gpt2 --batch-size 32 --block-size 1024 [--compile]
  python3 scripts/bench_torch.py --model char --device cpu --dtype f32 --tiny --steps 12   (smoke test)
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_torch import GPT, GPTConfig, decay_and_no_decay  # noqa: E402

# (n_layer, n_head, n_embd, data vocabulary, lr, beta2, dropout) as in configs/gpt2_124m.conf,
# gpt2_350m.conf, gpt2_774m.conf and shakespeare_char.conf (char: without its dropout;
# char-dropout: with it, 0.2).
MODELS = {
    "gpt2": dict(n_layer=12, n_head=12, n_embd=768, vocab=50257, lr=6e-4, beta2=0.95),
    "gpt2-350m": dict(n_layer=24, n_head=16, n_embd=1024, vocab=50257, lr=3e-4, beta2=0.95),
    "gpt2-774m": dict(n_layer=36, n_head=20, n_embd=1280, vocab=50257, lr=2.5e-4, beta2=0.95),
    "char": dict(n_layer=6, n_head=6, n_embd=384, vocab=65, lr=1e-3, beta2=0.99),
    "char-dropout": dict(n_layer=6, n_head=6, n_embd=384, vocab=65, lr=1e-3, beta2=0.99, dropout=0.2),
}
# A model small enough for a CPU smoke test in seconds.
TINY = dict(n_layer=2, n_head=2, n_embd=64)


def padded(vocab):
    """nanodist pads the logits' rows to a multiple of 128 on the GPU (50257 -> 50304)."""
    return (vocab + 127) // 128 * 128


def flops_per_token(model, n_layer, n_embd, T):
    """nanodist's count (nn/gpt.cpp flops_per_token): 6N + 12 L C T, N = all parameters."""
    n = sum(p.numel() for p in model.parameters())
    return 6.0 * n + 12.0 * n_layer * n_embd * T, n


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=sorted(MODELS), default="gpt2")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--block-size", type=int, default=1024)
    p.add_argument("--steps", type=int, default=40, help="optimizer steps, 1-based")
    p.add_argument("--first", type=int, default=10, help="first step of the median window")
    p.add_argument("--compile", action="store_true", help="wrap the model in torch.compile")
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", choices=["bf16", "f32"], default="bf16", help="bf16 = autocast to bfloat16")
    p.add_argument("--tiny", action="store_true", help="2 layers, 2 heads, 64 wide (smoke tests)")
    p.add_argument("--peak-tflops", type=float, default=0.0, help="device peak for MFU (0 = no MFU)")
    p.add_argument("--seed", type=int, default=1337)
    args = p.parse_args()
    if not 1 <= args.first <= args.steps:
        p.error(f"--first {args.first} must lie in [1, --steps {args.steps}]")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        p.error("--device cuda but torch sees no CUDA GPU")
    return args


def main():
    args = parse_args()
    spec = dict(MODELS[args.model])
    if args.tiny:
        spec.update(TINY)
    device = torch.device(args.device)
    on_cuda = device.type == "cuda"
    B, T = args.batch_size, args.block_size
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True

    vocab_rows = padded(spec["vocab"]) if on_cuda else spec["vocab"]
    config = GPTConfig(n_layer=spec["n_layer"], n_head=spec["n_head"], n_embd=spec["n_embd"], block_size=T,
                       vocab_size=vocab_rows, bias=True, dropout=spec.get("dropout", 0.0), use_sdpa=True)
    model = GPT(config).to(device)
    flops_token, n_params = flops_per_token(model, config.n_layer, config.n_embd, T)
    decay, no_decay = decay_and_no_decay(model)
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=spec["lr"], betas=(0.9, spec["beta2"]), fused=on_cuda)
    step_model = torch.compile(model) if args.compile else model
    autocast = torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=args.dtype == "bf16")

    def sync():
        if on_cuda:
            torch.cuda.synchronize(device)

    step_ms = []
    for step in range(1, args.steps + 1):
        sync()
        start = time.perf_counter()
        # Ids of the real vocabulary only, as nanodist's random-token data holds.
        batch = torch.randint(0, spec["vocab"], (B, T + 1), device=device)
        with autocast:
            _, loss = step_model(batch[:, :-1], batch[:, 1:])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        sync()
        step_ms.append(1000.0 * (time.perf_counter() - start))
        if not torch.isfinite(loss):
            sys.exit(f"bench_torch: loss is not finite at step {step}")

    window = step_ms[args.first - 1:]
    ms = statistics.median(window)
    tok_per_s = statistics.median(B * T / (m / 1000.0) for m in window)
    mfu = tok_per_s * flops_token / (args.peak_tflops * 1e12) if args.peak_tflops > 0 else None
    peak_allocated = torch.cuda.max_memory_allocated(device) if on_cuda else None
    peak_reserved = torch.cuda.max_memory_reserved(device) if on_cuda else None
    result = dict(model=args.model, mode="compile" if args.compile else "eager", device=str(device),
                  dtype=args.dtype, batch_size=B, block_size=T, n_layer=config.n_layer, n_embd=config.n_embd,
                  vocab_rows=vocab_rows, params=n_params, steps=f"{args.first}-{args.steps}", tok_per_s=tok_per_s,
                  ms=ms, mfu=mfu, peak_allocated_bytes=peak_allocated,
                  peak_reserved_bytes=peak_reserved, final_loss=float(loss.detach()), torch=torch.__version__)
    print("bench_torch: " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
