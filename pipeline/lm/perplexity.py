"""Perplexity = exp(mean negative log-likelihood), as in PA6a."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from pipeline.lm.model import GPT, GPT2_VOCAB


@torch.no_grad()
def token_logprobs(model: GPT, ids: list[int], context: list[int] | None = None) -> list[torch.Tensor]:
    """log p (nats) of each token of `ids` given `context` (e.g. the start token) and the tokens before it, as one
    tensor per window.

    Texts longer than the block size are scored with a sliding window of stride block_size // 2, so
    that every token but the first few sees at least half a block of history. Without a context, the first token
    of a bare sequence has nothing to condition on and is not scored."""
    model.eval()
    context = list(context or [])
    seq = context + list(ids)
    first = max(len(context), 1)
    block = model.cfg.block_size
    stride = max(block // 2, 1)
    windows = []
    scored_until = first  # tokens [first, scored_until) are done
    start = 0
    while scored_until < len(seq):
        end = min(start + block + 1, len(seq))  # window inputs seq[start:end-1], targets seq[start+1:end]
        window = torch.tensor(seq[start:end], dtype=torch.long, device=model.head.weight.device)[None]
        logits, _ = model(window[:, :-1])
        logp = F.log_softmax(logits[0, :, :GPT2_VOCAB].float(), dim=-1)
        targets = window[0, 1:]
        rows = torch.arange(scored_until, end, device=window.device) - start - 1  # targets not scored by an earlier window
        windows.append(logp[rows, targets[rows]])
        scored_until = end
        start += stride
    return windows


def sequence_nll(model: GPT, ids: list[int], context: list[int] | None = None) -> tuple[float, int]:
    """Summed NLL of `ids` (given `context`) and the number of tokens scored."""
    total, counted = 0.0, 0
    for logp in token_logprobs(model, ids, context):
        total -= logp.sum().item()
        counted += len(logp)
    return total, counted


def perplexity(model: GPT, ids: list[int], context: list[int] | None = None) -> float:
    """Perplexity of a token sequence under the model, with a sliding window beyond the block size."""
    nll, n = sequence_nll(model, ids, context)
    if n == 0:
        return float("nan")
    return math.exp(nll / n)
