"""Unembedding + cross-entropy in one pass over row chunks.

On a CPU the (batch·block, 50304) logits tensor dominates a training step: 154 MB written by the head
matmul, read and written again by log-softmax, its backward, and the zero-filled NLL gradient. Here each
chunk of rows computes its logits, its loss and its gradients while the chunk is still hot in cache, so
the full logits never exist. The result equals `F.cross_entropy(h @ w.T, t)` and its gradients (tested)."""
from __future__ import annotations

import torch

CHUNK_ROWS = 256


def _forward(ctx, h: torch.Tensor, w: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    n = h.size(0)
    need_grad = ctx.needs_input_grad[0] or ctx.needs_input_grad[1]
    grad_h = torch.empty_like(h) if need_grad else None
    grad_w = torch.zeros_like(w) if need_grad else None
    total = h.new_zeros((), dtype=torch.float64)
    for s in range(0, n, CHUNK_ROWS):
        hc, tc = h[s:s + CHUNK_ROWS], t[s:s + CHUNK_ROWS]
        logits = hc @ w.t()
        lse = torch.logsumexp(logits, dim=1)
        total += (lse - logits.gather(1, tc[:, None]).squeeze(1)).sum()
        if need_grad:
            p = logits.sub_(lse[:, None]).exp_()  # softmax, in place
            p[torch.arange(len(tc), device=p.device), tc] -= 1.0
            p.div_(n)
            torch.mm(p, w, out=grad_h[s:s + CHUNK_ROWS])
            grad_w.addmm_(p.t(), hc)
    if need_grad:
        ctx.save_for_backward(grad_h, grad_w)
    return (total / n).to(h.dtype)


def _backward(ctx, grad_out: torch.Tensor):
    grad_h, grad_w = ctx.saved_tensors
    return grad_h * grad_out, grad_w * grad_out, None


def _function(device_type: str) -> type[torch.autograd.Function]:
    """The loss as an autograd Function for one device type: under that device's autocast it runs in fp32."""
    class HeadLoss(torch.autograd.Function):
        forward = staticmethod(torch.amp.custom_fwd(device_type=device_type, cast_inputs=torch.float32)(_forward))
        backward = staticmethod(torch.amp.custom_bwd(device_type=device_type)(_backward))

    return HeadLoss


_FUNCTIONS = {"cpu": _function("cpu"), "cuda": _function("cuda")}


def head_loss(h: torch.Tensor, w: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of `targets` (N,) under logits `h @ w.T`, for h (N, C) and w (V, C)."""
    return _FUNCTIONS[h.device.type].apply(h, w, targets)
