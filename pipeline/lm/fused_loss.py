"""Unembedding + cross-entropy in one pass over row chunks.

On a CPU the (batch·block, 50304) logits tensor dominates a training step: 154 MB written by the head
matmul, then read and written by log-softmax, its backward and the zero-filled NLL gradient. Here each chunk of
rows computes its logits, its loss and both gradients in place, with one exp pass serving the loss and the
softmax, so nothing logits-sized is allocated twice. Chunks bound the memory for large batches; they are as
large as that allows, because no 50304-wide chunk fits in cache anyway and the three matmuls run nearer
their peak on more rows (PA6a's 768 rows are one chunk: 15% faster than 256-row chunks on a 2-core EPYC). The
element-wise work between the matmuls (max, exp, sum, scale) runs on blocks of BLOCK_ROWS rows, so that a row
is read from memory once and its passes run in cache. The result equals `F.cross_entropy(h @ w.T, t)` and its
gradients (tested).

Under bf16 autocast the three matmuls, 89% of a PA6a step's FLOPs, run in bf16 (the matmul kernels accumulate in
fp32), while the log-sum-exp, the softmax gradient, the loss and the weight-gradient sum stay fp32: a block's
bf16 logits are widened into an fp32 scratch block that stays in cache, and its softmax gradient is rounded to
bf16 once, as it is written back over the logits it came from. Everything else under autocast
already runs its matmuls in bf16; without this the head would have been cast to fp32 and the bf16 path would
gain nothing."""
from __future__ import annotations

import torch

CHUNK_ROWS = 1024  # 206 MB of fp32 logits at most
BLOCK_ROWS = 16  # 3.2 MB of fp32 logits: on a CPU, the element-wise passes over a block stay in cache


def softmax_rows(logits: torch.Tensor, targets: torch.Tensor, n: int, need_grad: bool,
                 block_rows: int | None = None) -> torch.Tensor:
    """Each row's loss (fp32) for a chunk of logits; with need_grad the logits are overwritten by the gradient
    of the mean loss with respect to them (softmax − one-hot, divided by n), in their own dtype. Rows are taken
    block_rows at a time (BLOCK_ROWS on a CPU; all at once on a GPU, which has no cache to keep a block in and
    would pay a kernel launch per block and pass)."""
    rows = logits.size(0)
    block_rows = block_rows or (BLOCK_ROWS if logits.device.type == "cpu" else rows)
    losses = torch.empty(rows, dtype=torch.float32, device=logits.device)
    target_logits = logits.gather(1, targets[:, None]).squeeze(1).float()
    widen = logits.dtype != torch.float32
    scratch = logits.new_empty((min(block_rows, rows), logits.size(1)), dtype=torch.float32) if widen else None
    for s in range(0, rows, block_rows):
        block, tb = logits[s:s + block_rows], targets[s:s + block_rows]
        top = block.amax(dim=1).float()  # exact in bf16 too
        p = scratch[:len(block)].copy_(block) if widen else block
        p.sub_(top[:, None]).exp_()  # in place; one exp pass serves both the loss and the softmax
        z = p.sum(dim=1)
        losses[s:s + block_rows] = z.log() + top - target_logits[s:s + block_rows]
        if need_grad:
            p.mul_((1.0 / (z * n))[:, None])  # the softmax, already divided by n for the mean
            p[torch.arange(len(tb), device=p.device), tb] -= 1.0 / n
            if widen:
                block.copy_(p)  # rounded to bf16 once, over the logits it came from
    return losses


def _forward(ctx, h: torch.Tensor, w: torch.Tensor, t: torch.Tensor, mm_dtype: torch.dtype,
             need_grad: bool) -> torch.Tensor:
    n = h.size(0)
    grad_h = torch.empty_like(h) if need_grad else None
    grad_w = torch.zeros_like(w) if need_grad else None
    total = h.new_zeros((), dtype=torch.float64)
    low = mm_dtype != h.dtype
    hm, wm = (h.to(mm_dtype), w.to(mm_dtype)) if low else (h, w)
    for s in range(0, n, CHUNK_ROWS):
        hc, tc = hm[s:s + CHUNK_ROWS], t[s:s + CHUNK_ROWS]
        logits = hc @ wm.t()
        total += softmax_rows(logits, tc, n, need_grad).sum()
        if need_grad:  # logits now holds their gradient
            if low:
                grad_h[s:s + CHUNK_ROWS] = logits @ wm
                grad_w += logits.t() @ hc
            else:
                torch.mm(logits, w, out=grad_h[s:s + CHUNK_ROWS])
                grad_w.addmm_(logits.t(), hc)
    if need_grad:
        ctx.save_for_backward(grad_h, grad_w)
    return (total / n).to(h.dtype)


def _backward(ctx, grad_out: torch.Tensor):
    grad_h, grad_w = ctx.saved_tensors
    return grad_h * grad_out, grad_w * grad_out, None, None, None


def _function(device_type: str) -> type[torch.autograd.Function]:
    """The loss as an autograd Function for one device type: its inputs arrive in fp32 (autocast off inside), and
    its matmuls run in `mm_dtype`."""
    class HeadLoss(torch.autograd.Function):
        forward = staticmethod(torch.amp.custom_fwd(device_type=device_type, cast_inputs=torch.float32)(_forward))
        backward = staticmethod(torch.amp.custom_bwd(device_type=device_type)(_backward))

    return HeadLoss


_FUNCTIONS = {"cpu": _function("cpu"), "cuda": _function("cuda")}


# torch.compile would unroll the block loop into one graph (1162 ms a step against 464 eager, and 126 s to compile
# on 2 cores); it compiles the rest of the model around the head instead.
@torch.compiler.disable
def head_loss(h: torch.Tensor, w: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of `targets` (N,) under logits `h @ w.T`, for h (N, C) and w (V, C); the matmuls in
    bf16 under bf16 autocast, else in fp32."""
    device = h.device.type
    bf16 = torch.is_autocast_enabled(device) and torch.get_autocast_dtype(device) == torch.bfloat16
    # Decided here, not from ctx.needs_input_grad: that stays True under torch.no_grad(), and an evaluation
    # would pay for both gradient matmuls, two thirds of the head's cost, and throw them away.
    need_grad = torch.is_grad_enabled() and (h.requires_grad or w.requires_grad)
    return _FUNCTIONS[device].apply(h, w, targets, torch.bfloat16 if bf16 else torch.float32, need_grad)
