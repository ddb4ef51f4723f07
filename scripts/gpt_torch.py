"""PyTorch reference of nanodist's GPT, layer for layer and with the same parameter names.

Used by make_golden.py (golden values for tests/nn/golden_test.cpp) and by ckpt_to_torch.py
(loading a nanodist checkpoint into PyTorch to sample from it). Shapes: B batch, T time,
C = n_embd, nh heads, hs = C / nh head size, V vocabulary rows (padded vocab when the
checkpoint pads it).
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

LAYERNORM_EPS = 1e-5


@dataclass
class GPTConfig:
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 32
    block_size: int = 16
    vocab_size: int = 37
    bias: bool = True
    dropout: float = 0.0
    use_layernorm: bool = True
    use_residual: bool = True
    # Attention through F.scaled_dot_product_attention (fused kernels, for speed benchmarks);
    # off by default so the golden values keep coming from the explicit softmax below.
    use_sdpa: bool = False


def make_norm(config):
    """LayerNorm over C (eps 1e-5), or the identity when the ablation turns LayerNorm off."""
    if not config.use_layernorm:
        return nn.Identity()
    return nn.LayerNorm(config.n_embd, eps=LAYERNORM_EPS, elementwise_affine=True, bias=config.bias)


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0, "n_embd must be a multiple of n_head"
        self.n_head = config.n_head
        self.use_sdpa = config.use_sdpa
        self.dropout = config.dropout
        # One GEMM for q|k|v, packed in that order along the output dim: (C) -> (3C).
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)
        # (B, T, C) -> (B, nh, T, hs)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        if self.use_sdpa:
            dropout_p = self.dropout if self.training else 0.0
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True)  # (B, nh, T, hs)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(hs)  # (B, nh, T, T)
            future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
            scores = scores.masked_fill(future, float("-inf"))
            y = self.attn_dropout(F.softmax(scores, dim=-1)) @ v  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x), approximate="tanh")))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.use_residual = config.use_residual
        self.ln_1 = make_norm(config)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = make_norm(config)
        self.mlp = MLP(config)

    def forward(self, x):
        if self.use_residual:
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))
        x = self.attn(self.ln_1(x))
        return self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=make_norm(config),
        ))
        # The output head shares the token embedding (weight tying), no bias; it is not a
        # separate entry in named_parameters().
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight
        self.reset_parameters()

    def reset_parameters(self, generator=None):
        """nanoGPT's init: N(0, 0.02), residual projections N(0, 0.02/sqrt(2 n_layer)),
        biases 0, LayerNorm weight 1."""
        proj_std = 0.02 / math.sqrt(2 * self.config.n_layer)
        for name, p in self.named_parameters():
            with torch.no_grad():
                if name.endswith("c_proj.weight"):
                    p.normal_(0.0, proj_std, generator=generator)
                elif ".ln_" in name and name.endswith(".weight"):  # ln_1, ln_2, ln_f
                    p.fill_(1.0)
                elif name.endswith(".bias"):
                    p.zero_()
                else:
                    p.normal_(0.0, 0.02, generator=generator)

    def forward(self, idx, targets=None):
        """idx (B, T) int64 -> logits (B, T, V); loss = mean cross-entropy over targets != -1."""
        B, T = idx.shape
        assert T <= self.config.block_size, f"sequence of {T} tokens exceeds block_size {self.config.block_size}"
        pos = torch.arange(T, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-1)
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, allowed_vocab=None, generator=None):
        """Appends max_new_tokens sampled tokens to idx (B, T). Only the first `allowed_vocab`
        logits are sampled (a padded vocabulary's extra rows are never real tokens)."""
        for _ in range(max_new_tokens):
            context = idx[:, -self.config.block_size:]
            logits, _ = self(context)
            logits = logits[:, -1, :allowed_vocab] / max(temperature, 1e-8)
            if top_k is not None and top_k > 0:
                kth = torch.topk(logits, min(top_k, logits.size(-1))).values[:, [-1]]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            probs = F.softmax(logits, dim=-1)
            next_token = torch.multinomial(probs, num_samples=1, generator=generator)
            idx = torch.cat([idx, next_token], dim=1)
        return idx


def decay_and_no_decay(model):
    """AdamW groups: weight decay on parameters with dim >= 2 (matrices, embeddings), none on
    biases and LayerNorm parameters."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return decay, no_decay
