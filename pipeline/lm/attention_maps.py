"""The trained model's causal attention, as the lecture draws it: for one sentence (after the sampling prompt),
each layer's and head's softmax(Q·Kᵀ/√d_k + mask) over its tokens. The weights are the output of the model's own
attention code (model.AttentionWeights), watched with forward hooks; nothing is recomputed here."""
from __future__ import annotations

import numpy as np
import torch

from pipeline.lm import tokenizer
from pipeline.lm.model import GPT


def token_labels(ids: list[int]) -> list[str]:
    """Each token as text, with its leading space shown as ␣ and a newline as ⏎."""
    enc = tokenizer.gpt2()
    return [enc.decode_single_token_bytes(t).decode("utf-8", "replace").replace("\n", "⏎").replace(" ", "␣")
            for t in ids]


@torch.no_grad()
def attention(model: GPT, ids: list[int]) -> np.ndarray:
    """(layers, heads, T, T) attention weights of `ids` (at most one block), rows attending to columns."""
    ids = ids[:model.cfg.block_size]
    captured: list[torch.Tensor] = []
    hooks = [block.attn.weights.register_forward_hook(lambda module, args, out: captured.append(out[0].float()))
             for block in model.blocks]
    fast = [block.attn.fast for block in model.blocks]
    try:
        for block in model.blocks:  # the explicit path: fused attention never forms the weights
            block.attn.fast = False
        model.eval()
        model(torch.tensor([ids], dtype=torch.long, device=model.head.weight.device))
    finally:
        for hook in hooks:
            hook.remove()
        for block, was in zip(model.blocks, fast):
            block.attn.fast = was
    return torch.stack(captured).cpu().numpy()


def sentence(model: GPT, text: str, context: list[int]) -> tuple[list[str], np.ndarray]:
    """The tokens the model read (the prompt's, then the sentence's) and their attention weights."""
    ids = (context + tokenizer.encode(text))[:model.cfg.block_size]
    return token_labels(ids), attention(model, ids)
