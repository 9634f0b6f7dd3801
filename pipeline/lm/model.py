"""The CS124 PA6a GPT: causal multi-head self-attention, pre-LN blocks (post-LN optional),
learned position embeddings and an unembedding tied to the token embedding."""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from pipeline.lm.config import GPTConfig
from pipeline.lm.fused_loss import head_loss

GPT2_VOCAB = 50257  # real GPT-2 BPE tokens; the embedding is padded past this for speed

__all__ = ["GPT", "GPTConfig", "GPT2_VOCAB", "attention", "attention_weights", "causal_mask"]


def causal_mask(t: int, device=None) -> torch.Tensor:
    """Boolean (t, t) mask, True where position i may not look at j (j > i)."""
    return torch.ones(t, t, dtype=torch.bool, device=device).triu(1)


def attention_weights(q: torch.Tensor, k: torch.Tensor, causal: bool = True) -> torch.Tensor:
    """softmax(q kᵀ / √d_k + mask): how much each position attends to each other, written out so that the math
    is visible. A row sums to 1; a masked (future) position gets exactly 0."""
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    if causal:
        t = q.size(-2)
        scores = scores.masked_fill(causal_mask(t, q.device), float("-inf"))
    return F.softmax(scores, dim=-1)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = True) -> torch.Tensor:
    """softmax(q kᵀ / √d_k + mask) v."""
    return attention_weights(q, k, causal) @ v


class AttentionWeights(nn.Module):
    """The causal softmax of one attention layer, as a module so that its output can be watched with a forward
    hook (lm/attention_maps.py records it); it has no parameters, so checkpoints do not change."""

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return attention_weights(q, k)


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        assert cfg.n_embd % cfg.n_head == 0
        self.n_head = cfg.n_head
        self.fast = cfg.fast_attention
        self.query = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.key = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.value = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.dropout)
        self.weights = AttentionWeights()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape

        def heads(z):  # (b, t, c) -> (b, h, t, c/h)
            return z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        if self.fast:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            y = self.weights(q, k) @ v
        y = y.transpose(1, 2).contiguous().view(b, t, c)  # concatenate the heads
        return self.dropout(self.proj(y))


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=cfg.bias)
        self.proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.proj(F.gelu(self.fc(x))))


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.post_ln = cfg.post_ln
        self.ln1 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.post_ln:
            x = self.ln1(x + self.attn(x))
            return self.ln2(x + self.mlp(x))
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.pos_emb = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        # Post-LN already ends every block in a LayerNorm.
        self.ln_f = nn.Identity() if cfg.post_ln else nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.head.weight = self.tok_emb.weight  # tied unembedding
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # GPT-2's scaled init of residual projections
            if name.endswith("proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None, fused_loss: bool = True):
        """Logits (b, t, vocab) without targets; with targets, (None, mean cross-entropy).

        The loss runs over the padded vocabulary, as nanoGPT's does: padding ids never occur as targets, so
        training drives them down at once. It is fused with the unembedding (see fused_loss) unless the
        explicit path is asked for with fused_loss=False."""
        b, t = idx.shape
        x = self.hidden(idx)
        if targets is None:
            return self.head(x), None
        if fused_loss:
            return None, head_loss(x.reshape(b * t, -1), self.head.weight, targets.reshape(-1))
        logits = self.head(x)
        return logits, F.cross_entropy(logits.view(b * t, -1), targets.reshape(-1))

    def hidden(self, idx: torch.Tensor) -> torch.Tensor:
        """The final layer's output (b, t, n_embd), before the unembedding."""
        t = idx.size(1)
        if t > self.cfg.block_size:
            raise ValueError(f"sequence of {t} tokens exceeds block_size {self.cfg.block_size}")
        pos = torch.arange(t, device=idx.device)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x)

    @torch.no_grad()
    def generate(self, idx: torch.Tensor, max_new_tokens: int, temperature: float = 1.0,
                 top_k: int | None = None, generator: torch.Generator | None = None) -> torch.Tensor:
        """Sample tokens autoregressively, only ever from the real GPT-2 vocabulary. Only the last position is
        unembedded: PA6a's loop computes the 50304-wide logits of the whole context and uses one row, which takes
        1.56× the time (bench/sample_speed.py)."""
        for _ in range(max_new_tokens):
            last = self.hidden(idx[:, -self.cfg.block_size:])[:, -1]
            logits = self.head(last)[:, :GPT2_VOCAB].float() / temperature
            if top_k is not None:
                kth = torch.topk(logits, min(top_k, logits.size(-1))).values[:, [-1]]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            probs = F.softmax(logits, dim=-1)
            nxt = torch.multinomial(probs, num_samples=1, generator=generator)
            idx = torch.cat((idx, nxt), dim=1)
        return idx
