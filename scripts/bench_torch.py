"""Training speed of scripts/gpt_torch.py's GPT in PyTorch: the peer that scripts/bench_train.sh
compares nanodist against, on the same GPU and the same shapes.

Per step: a fresh batch of uniform random ids (B, T+1) on the device, forward + cross-entropy
under bf16 autocast, backward, global-norm clipping to 1.0, fused AdamW. Each step is timed
between torch.cuda.synchronize() calls; the result is the median over steps FIRST..STEPS
(1-based, so compilation and warm-up stay out). Attention uses F.scaled_dot_product_attention.
Prints one line: "bench_torch: {json}" with tok_per_s, ms, mfu (null without --peak-tflops) and, on
a GPU, the peak device memory of the run: torch.cuda.max_memory_allocated (bytes in live tensors,
what nanodist's "peak GPU memory" counts) and max_memory_reserved (what the caching allocator took).

FSDP2 (--fsdp, launched with torchrun, one process per GPU): the model is built on the meta device,
each block (optionally wrapped for activation checkpointing, --ac, and compiled, --compile) then the
root is sharded with torch.distributed.fsdp.fully_shard under MixedPrecisionPolicy(param_dtype
bf16, reduce_dtype f32) (no autocast), materialised shard by shard and initialised as
nanoGPT's; every rank draws its own batch. tok_per_s then counts all ranks' tokens, mfu divides by
the peak of all GPUs, and peak_allocated_bytes is the largest over the ranks (per GPU).
Out of GPU memory, any mode prints "bench_torch: {"out_of_memory": true, ...}" and exits 3.

  python3 scripts/bench_torch.py --model gpt2 --batch-size 32 --block-size 1024 [--compile]
  python3 scripts/bench_torch.py --model char --device cpu --dtype f32 --tiny --steps 12   (smoke test)
  torchrun --standalone --nproc-per-node 2 scripts/bench_torch.py --fsdp --ac --model gpt-6.7b --batch-size 2
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
import torch.utils.checkpoint

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
    # configs/gpt2_1558m.conf, and GPT-3's 2.7B, 6.7B (configs/gpt_6.7b.conf) and 13B shapes (13B at
    # width 5120, a multiple of its 40 heads): the memory ladder of scripts/bench_memory.sh.
    "gpt2-xl": dict(n_layer=48, n_head=25, n_embd=1600, vocab=50257, lr=2e-4, beta2=0.95),
    "gpt-2.7b": dict(n_layer=32, n_head=32, n_embd=2560, vocab=50257, lr=1.6e-4, beta2=0.95),
    "gpt-6.7b": dict(n_layer=32, n_head=32, n_embd=4096, vocab=50257, lr=1.2e-4, beta2=0.95),
    "gpt-13b": dict(n_layer=40, n_head=40, n_embd=5120, vocab=50257, lr=1e-4, beta2=0.95),
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


class CheckpointedBlock(torch.nn.Module):
    """A block that keeps only its input for backward and reruns itself there (torch.utils.checkpoint,
    non-reentrant): nanodist's --recompute block."""

    def __init__(self, block):
        super().__init__()
        self.block = block

    def forward(self, x):
        return torch.utils.checkpoint.checkpoint(self.block, x, use_reentrant=False)


def wrap_blocks(model, ac, compile_blocks):
    """Each block checkpointed (ac) and compiled on its own (compile_blocks), in that order (torchtitan's)."""
    blocks = model.transformer.h
    for i in range(len(blocks)):
        block = CheckpointedBlock(blocks[i]) if ac else blocks[i]
        if compile_blocks:
            block.compile()
        blocks[i] = block


def fsdp2_model(config, device, ac, compile_blocks):
    """The GPT sharded by FSDP2: fully_shard per block, then the root (embeddings, ln_f, tied head)."""
    try:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    except ImportError:  # PyTorch before 2.6
        from torch.distributed._composable.fsdp import MixedPrecisionPolicy, fully_shard
    with torch.device("meta"):
        model = GPT(config)
    wrap_blocks(model, ac, compile_blocks)
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    blocks = model.transformer.h
    for i, block in enumerate(blocks):
        # The last block's parameters are needed again at once by backward: keep them gathered.
        fully_shard(block, mp_policy=policy, reshard_after_forward=i < len(blocks) - 1)
    fully_shard(model, mp_policy=policy)
    model.to_empty(device=device)
    if model.lm_head.weight is not model.transformer.wte.weight:
        sys.exit("bench_torch: the tied head lost its tie when FSDP2 materialised the model")
    model.reset_parameters()
    return model


def launched_by_torchrun():
    return "LOCAL_RANK" in os.environ and "WORLD_SIZE" in os.environ


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=sorted(MODELS), default="gpt2")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--block-size", type=int, default=1024)
    p.add_argument("--steps", type=int, default=40, help="optimizer steps, 1-based")
    p.add_argument("--first", type=int, default=10, help="first step of the median window")
    p.add_argument("--compile", action="store_true",
                   help="wrap the model in torch.compile (with --fsdp: each block, as torchtitan does)")
    p.add_argument("--fsdp", action="store_true", help="FSDP2 over the ranks of torchrun (one per GPU)")
    p.add_argument("--ac", action="store_true", help="activation checkpointing of every block")
    p.add_argument("--n-layer", type=int, help="blocks (default: the model's)")
    p.add_argument("--n-head", type=int, help="attention heads (default: the model's)")
    p.add_argument("--n-embd", type=int, help="width (default: the model's)")
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
    if args.fsdp and not launched_by_torchrun():
        p.error("--fsdp runs under torchrun: torchrun --standalone --nproc-per-node N scripts/bench_torch.py --fsdp ...")
    if args.fsdp and args.dtype != "bf16":
        p.error("--fsdp trains with bf16 parameters (MixedPrecisionPolicy); --dtype f32 is not a mode of it")
    for flag in ("n_layer", "n_head", "n_embd"):
        if getattr(args, flag) is not None and getattr(args, flag) < 1:
            p.error(f"--{flag.replace('_', '-')} must be >= 1")
    return args


def out_of_memory(error, rank):
    """The result line of a run that ran out of GPU memory; exit 3 without waiting for other ranks."""
    print("bench_torch: " + json.dumps(dict(out_of_memory=True, rank=rank, error=str(error).splitlines()[0])),
          flush=True)
    os._exit(3)


def main():
    args = parse_args()
    spec = dict(MODELS[args.model])
    if args.tiny:
        spec.update(TINY)
    for flag in ("n_layer", "n_head", "n_embd"):
        if getattr(args, flag) is not None:
            spec[flag] = getattr(args, flag)
    if spec["n_embd"] % spec["n_head"]:
        sys.exit(f"bench_torch: n_embd {spec['n_embd']} is not divisible by n_head {spec['n_head']}")
    rank, world = 0, 1
    if args.fsdp:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        if args.device.startswith("cuda"):
            args.device = f"cuda:{int(os.environ['LOCAL_RANK'])}"
            torch.cuda.set_device(torch.device(args.device))
        torch.distributed.init_process_group("nccl" if args.device.startswith("cuda") else "gloo")
    device = torch.device(args.device)
    on_cuda = device.type == "cuda"
    B, T = args.batch_size, args.block_size
    torch.manual_seed(args.seed)  # the same on every rank: FSDP2's DTensor draws need one seed
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True

    vocab_rows = padded(spec["vocab"]) if on_cuda else spec["vocab"]
    config = GPTConfig(n_layer=spec["n_layer"], n_head=spec["n_head"], n_embd=spec["n_embd"], block_size=T,
                       vocab_size=vocab_rows, bias=True, dropout=spec.get("dropout", 0.0), use_sdpa=True)
    oom = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)
    try:
        if args.fsdp:
            model = fsdp2_model(config, device, args.ac, args.compile)
            step_model = model
        else:
            model = GPT(config).to(device)
            if args.ac:
                wrap_blocks(model, ac=True, compile_blocks=False)
            step_model = torch.compile(model) if args.compile else model
        torch.manual_seed(args.seed + rank)  # each rank its own batches
        # DTensor parameters count their global elements: the unsharded model's N on every rank.
        flops_token, n_params = flops_per_token(model, config.n_layer, config.n_embd, T)
        decay, no_decay = decay_and_no_decay(model)
        optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                       {"params": no_decay, "weight_decay": 0.0}],
                                      lr=spec["lr"], betas=(0.9, spec["beta2"]), fused=on_cuda)
        # FSDP2 casts the parameters itself; the plain model computes in bf16 under autocast.
        autocast = torch.autocast(device_type=device.type, dtype=torch.bfloat16,
                                  enabled=args.dtype == "bf16" and not args.fsdp)

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
    except oom as e:
        out_of_memory(e, rank)

    window = step_ms[args.first - 1:]
    ms = statistics.median(window)
    tok_per_s = statistics.median(world * B * T / (m / 1000.0) for m in window)
    mfu = tok_per_s * flops_token / (args.peak_tflops * 1e12 * world) if args.peak_tflops > 0 else None
    peak_allocated = torch.cuda.max_memory_allocated(device) if on_cuda else None
    peak_reserved = torch.cuda.max_memory_reserved(device) if on_cuda else None
    if args.fsdp and on_cuda:  # the fullest GPU
        peaks = torch.tensor([peak_allocated, peak_reserved], dtype=torch.float64, device=device)
        torch.distributed.all_reduce(peaks, op=torch.distributed.ReduceOp.MAX)
        peak_allocated, peak_reserved = int(peaks[0]), int(peaks[1])
    result = dict(model=args.model, mode="compile" if args.compile else "eager", device=str(device),
                  dtype=args.dtype, batch_size=B, block_size=T, n_layer=config.n_layer, n_head=config.n_head,
                  n_embd=config.n_embd, vocab_rows=vocab_rows, params=n_params, steps=f"{args.first}-{args.steps}",
                  tok_per_s=tok_per_s, ms=ms, mfu=mfu, peak_allocated_bytes=peak_allocated,
                  peak_reserved_bytes=peak_reserved, final_loss=float(loss.detach().float()),
                  fsdp="fsdp2" if args.fsdp else None, world_size=world, activation_checkpointing=args.ac,
                  torch=torch.__version__)
    if rank == 0:
        print("bench_torch: " + json.dumps(result), flush=True)
    if args.fsdp:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
