"""Unembedding + cross-entropy in one pass over row chunks.

On a CPU the (batch·block, 50304) logits tensor dominates a training step: 154 MB written by the head
matmul, then read and written by log-softmax, its backward and the zero-filled NLL gradient. Here each chunk of
rows computes its logits, its loss and both gradients in place, so nothing logits-sized is allocated twice.
Chunks bound the memory for large batches; they are as large as that allows, because no 50304-wide chunk fits in
cache anyway and the three matmuls run nearer their peak on more rows (PA6a's 768 rows are one chunk: 15% faster
than 256-row chunks on a 2-core EPYC).

Between the matmuls there is one pass of PyTorch's fused softmax kernel, in place: it takes a row's max, exp and
sum while the row is in cache and exponentiates once. The softmax serves the loss, −log p(target), and, minus the
one-hot of the target, the gradient of the summed loss with respect to the logits; the 1/N of the mean is applied
to the two small gradients in the backward, not to the logits. A target whose probability underflows fp32 (a loss
above 87 nats) has its loss taken from a log-sum-exp of its row instead. The result equals
`F.cross_entropy(h @ w.T, t)` and its gradients (tested).

Under bf16 autocast the three matmuls, 89% of a PA6a step's FLOPs, run in bf16 (the matmul kernels accumulate in
fp32), while the log-sum-exp, the loss and the weight-gradient sum stay fp32. The bf16 logits go through the same
softmax kernel in place, which widens each row into an fp32 buffer in cache: each probability is rounded to bf16
once, bit for bit what widening the logits, an fp32 softmax and rounding would give, and that is the gradient but
at the target. There p − 1 comes from the rounded p (off by 2⁻¹⁰ at most below 1/2), or above 1/2 from the rest
of the row, whose probabilities are each good to 2⁻⁹. A token's loss moves by at most 2⁻⁸ nats (0.004), where
rounding the logits to bf16 already moves it by up to 0.05 (a batch of the default run's LM: the mean loss by
5e-5 against 3e-4). Widening 16-row blocks into an fp32 scratch instead took 52 ms a step on a 2-core EPYC, this
pass 41. Everything else under autocast already runs its matmuls in bf16; without this the head would have been
cast to fp32 and the bf16 path would gain nothing."""
from __future__ import annotations

import torch

CHUNK_ROWS = 1024  # 206 MB of fp32 logits at most
TINY = torch.finfo(torch.float32).tiny  # below this a probability has lost precision, or is 0


def softmax_rows(logits: torch.Tensor, targets: torch.Tensor, need_grad: bool) -> torch.Tensor:
    """Each row's softmax probability of its target (fp32), for a chunk of logits. With need_grad the logits are
    overwritten by softmax − one-hot, the gradient of the rows' summed loss with respect to them, in their own
    dtype. PyTorch's kernel takes bf16 logits a row at a time through an fp32 buffer, so the max, the sum and the
    exponentials are fp32, and each probability is rounded to bf16 once, as it is written."""
    index = torch.arange(logits.size(0), device=logits.device)
    torch.ops.aten._softmax.out(logits, 1, False, out=logits)  # in place: each element is read before written
    p_target = logits[index, targets].float()
    if logits.dtype != torch.float32:
        # Above 1/2 a bf16 probability is a multiple of 2⁻⁸, so p − 1, the target's gradient, would have no
        # correct bit left for a confident prediction (0.997 − 1 would read −0.0039 or 0). There the other
        # probabilities of the row, each good to 2⁻⁹, give 1 − p instead.
        sure = (p_target > 0.5).nonzero().squeeze(1)
        if len(sure):
            p_target[sure] = 1.0 - (logits.index_select(0, sure).sum(1, dtype=torch.float32) - p_target[sure])
    if need_grad:
        logits[index, targets] = (p_target - 1.0).to(logits.dtype)
    return p_target


def _forward(ctx, h: torch.Tensor, w: torch.Tensor, t: torch.Tensor, mm_dtype: torch.dtype,
             need_grad: bool) -> torch.Tensor:
    n = h.size(0)
    grad_h = torch.empty_like(h) if need_grad else None
    grad_w = None
    total = h.new_zeros((), dtype=torch.float64)
    low = mm_dtype != h.dtype
    hm, wm = (h.to(mm_dtype), w.to(mm_dtype)) if low else (h, w)
    for s in range(0, n, CHUNK_ROWS):
        hc, tc = hm[s:s + CHUNK_ROWS], t[s:s + CHUNK_ROWS]
        logits = hc @ wm.t()
        p_target = softmax_rows(logits, tc, need_grad)
        losses = -p_target.log()
        far = p_target < TINY
        if far.any():  # rare: −log p would be inexact or infinite, so the row's logits are computed again
            rows = (hc[far] @ wm.t()).float()
            losses[far] = rows.logsumexp(1) - rows.gather(1, tc[far, None]).squeeze(1)
        total += losses.sum()
        if need_grad:  # logits now holds their gradient
            if low:
                grad_h[s:s + CHUNK_ROWS] = logits @ wm
            else:
                torch.mm(logits, w, out=grad_h[s:s + CHUNK_ROWS])
            if grad_w is None:  # not zeros + addmm_: a 25 MB fill and read saved
                grad_w = logits.t() @ hc  # bf16 under autocast: widened to fp32 as the backward scales it
            elif low:
                grad_w = grad_w.float()  # from the second chunk on, summed in fp32
                grad_w += logits.t() @ hc
            else:
                grad_w.addmm_(logits.t(), hc)
    if need_grad:
        ctx.n = n
        ctx.save_for_backward(grad_h, grad_w)
    return (total / n).to(h.dtype)


def _backward(ctx, grad_out: torch.Tensor):
    grad_h, grad_w = ctx.saved_tensors
    # The mean's 1/N, here rather than over every logit; one element rather than none, so that type promotion
    # widens a bf16 grad_w to fp32 in the same pass: the same values as widening it first, 13 MB less traffic.
    scale = (grad_out / ctx.n).reshape(1)
    return grad_h * scale, grad_w * scale, None, None, None


def _function(device_type: str) -> type[torch.autograd.Function]:
    """The loss as an autograd Function for one device type: its inputs arrive in fp32 (autocast off inside), and
    its matmuls run in `mm_dtype`."""
    class HeadLoss(torch.autograd.Function):
        forward = staticmethod(torch.amp.custom_fwd(device_type=device_type, cast_inputs=torch.float32)(_forward))
        backward = staticmethod(torch.amp.custom_bwd(device_type=device_type)(_backward))

    return HeadLoss


_FUNCTIONS = {"cpu": _function("cpu"), "cuda": _function("cuda")}


def head_loss(h: torch.Tensor, w: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of `targets` (N,) under logits `h @ w.T`, for h (N, C) and w (V, C); the matmuls in
    bf16 under bf16 autocast, else in fp32."""
    if torch.compiler.is_compiling():
        return _untraced()(h, w, targets)
    return _head_loss(h, w, targets)


_untraced_head = None  # made once, not by functools.cache: torch.compile traces through its wrapper, with a warning


def _untraced():
    """The head as torch.compile leaves it, eager. Compiled, its loops were unrolled into one graph (1162 ms a step
    against 464 eager, and 126 s to compile on 2 cores), so the model compiles around it. Made here, not by
    decorating head_loss: `torch.compiler.disable` imports torch._dynamo, 1.3 s of every process that loads the
    model, and only a process that compiles gets here, with it already loaded."""
    global _untraced_head
    if _untraced_head is None:
        _untraced_head = torch.compiler.disable(_head_loss)
    return _untraced_head


def _head_loss(h: torch.Tensor, w: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    device = h.device.type
    bf16 = torch.is_autocast_enabled(device) and torch.get_autocast_dtype(device) == torch.bfloat16
    # Decided here, not from ctx.needs_input_grad: that stays True under torch.no_grad(), and an evaluation
    # would pay for both gradient matmuls, two thirds of the head's cost, and throw them away.
    need_grad = torch.is_grad_enabled() and (h.requires_grad or w.requires_grad)
    return _FUNCTIONS[device].apply(h, w, targets, torch.bfloat16 if bf16 else torch.float32, need_grad)
