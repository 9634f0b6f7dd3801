"""bf16 training numerics at fp32 speed, for a CPU without native bf16.

A bf16 GEMM multiplies bf16 operands, whose products are exact in fp32 (8 × 8 significant bits), sums them in fp32
and rounds the result to bf16 once. `EmulatedBf16` computes exactly that for the matmuls bf16 autocast issues,
through the fp32 kernels: on a CPU whose bf16 matmul runs at 1 GFLOP/s, a 2000-iteration training in bf16 takes
about as long as in fp32 instead of days. Only the order of the fp32 additions may differ from a native kernel's,
which is the rounding noise any two fp32 GEMMs differ by. Everything else (softmax, LayerNorm, casts, AdamW) runs
its real bf16 kernels. It checks what bf16 does to the loss curve, never how fast bf16 is."""
from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten
BF16 = torch.bfloat16


def _wide(x):
    return x.float() if isinstance(x, torch.Tensor) and x.dtype == BF16 else x


class EmulatedBf16(TorchDispatchMode):
    """Within it, mm, addmm, bmm and baddbmm on bf16 tensors run in fp32 on the same operands and are rounded to
    bf16 once (use it around a training loop that runs under bf16 autocast)."""

    MATMULS = {aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default}

    def __init__(self):
        super().__init__()
        self.emulated = 0  # matmuls taken over, so that a run can show it was emulated

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self.MATMULS and any(isinstance(a, torch.Tensor) and a.dtype == BF16 for a in args):
            self.emulated += 1
            return func(*map(_wide, args), **kwargs).to(BF16)
        return func(*args, **kwargs)
