"""Train the GPT on token ids: PA6a's loop (AdamW, warmup + cosine, clipping), with resume.

Two checkpoints live in the model directory: `last.pt` (written at every evaluation, so a killed run
resumes from there) and `ckpt.pt` (the best validation loss so far, which sampling uses)."""
from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from pipeline.core import store
from pipeline.exec.malloc import tune_malloc
from pipeline.exec.progress import bar as progress_bar
from pipeline.lm.config import TrainConfig
from pipeline.lm.model import GPT, GPTConfig

log = logging.getLogger(__name__)

LOG_COLUMNS = ["iter", "lr", "loss", "eval_train", "eval_val", "ms_per_iter"]


def lr_at(it: int, cfg: TrainConfig) -> float:
    """Linear warmup, then cosine decay from lr to min_lr at lr_decay_iters, then flat."""
    if it < cfg.warmup_iters:
        return cfg.lr * (it + 1) / (cfg.warmup_iters + 1)
    if it > cfg.lr_decay_iters:
        return cfg.min_lr
    ratio = (it - cfg.warmup_iters) / (cfg.lr_decay_iters - cfg.warmup_iters)
    return cfg.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (cfg.lr - cfg.min_lr)


def get_batch(data: np.ndarray, batch_size: int, block_size: int, rng: np.random.Generator, device: str = "cpu"):
    if len(data) <= block_size + 1:
        raise ValueError(f"{len(data)} tokens are too few for block_size {block_size}")
    ix = rng.integers(0, len(data) - block_size - 1, size=batch_size)
    x = np.stack([data[i:i + block_size] for i in ix]).astype(np.int64)
    y = np.stack([data[i + 1:i + 1 + block_size] for i in ix]).astype(np.int64)
    return torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)


def autocast(precision: str, device: str = "cpu"):
    if precision == "bf16":
        return torch.autocast(device, dtype=torch.bfloat16)
    return contextlib.nullcontext()


@torch.no_grad()
def estimate_loss(model: GPT, splits: dict[str, np.ndarray], cfg: TrainConfig, seed: int,
                  device: str = "cpu") -> dict[str, float]:
    """Mean loss over eval_iters batches per split, on batches fixed by `seed` so evaluations compare."""
    model.eval()
    out = {}
    for name, data in splits.items():
        rng = np.random.default_rng(seed)
        losses = []
        for _ in range(cfg.eval_iters):
            x, y = get_batch(data, cfg.batch_size, model.cfg.block_size, rng, device)
            with autocast(cfg.precision, device):
                _, loss = model(x, y)
            losses.append(loss.item())
        out[name] = float(np.mean(losses))
    model.train()
    return out


def training_step(model: GPT, precision: str, device: str):
    """Forward and backward of one batch, returning the loss. A PA6a step is tiny for a GPU (12 × 64 tokens, tens of
    microseconds of an H200's arithmetic), so there it is launch-bound: the step is captured once as CUDA graphs
    (torch.compile's "reduce-overhead") with the plain cross-entropy, whose full logits a GPU holds easily, and the
    fused chunked head, written to save a CPU's memory traffic, stays on the CPU. On an H200: 3.5 ms a step against
    plain eager fp32's 13.2, the same loss curve (bench/gpu_train_variants.py)."""
    fused = device != "cuda"

    def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        with autocast(precision, device):
            _, loss = model(x, y, fused_loss=fused)
        loss.backward()
        return loss.detach()

    return step if device != "cuda" else _Captured(step, model)


class _Captured:
    """A step run as CUDA graphs, or eagerly where torch.compile cannot build them (it needs Triton and a C
    compiler): the same arithmetic either way."""

    def __init__(self, step, model: GPT):
        self.step, self.model = step, model
        self.compiled = torch.compile(step, mode="reduce-overhead")

    def __call__(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.compiled is not None:
            try:
                return self.compiled(x, y).clone()  # a graph's output is overwritten by its next replay
            except Exception as e:
                log.warning("torch.compile failed (%s: %s): training eagerly", type(e).__name__, e)
                self.compiled = None
                self.model.zero_grad(set_to_none=True)
        return self.step(x, y)


def make_optimizer(model: GPT, cfg: TrainConfig, fused: bool = True) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices only (not biases, LayerNorms), as nanoGPT. The fused kernel does the
    same arithmetic in one pass over each tensor: 12 ms a step instead of 41 on a 2-core CPU, the same losses."""
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), fused=fused)


def save_checkpoint(path: Path, model: GPT, optimizer, it: int, best_val: float, rng: np.random.Generator,
                    train_cfg: TrainConfig, meta: dict) -> None:
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "iter": it,
        "best_val": best_val,
        "rng": rng.bit_generator.state,
        "torch_rng": torch.get_rng_state(),
        "model_config": asdict(model.cfg),
        "train_config": asdict(train_cfg),
        "tokenizer": "gpt2",  # r50k_base, built offline by pipeline.lm.tokenizer
        **meta,
    }
    with store.atomic_path(path) as tmp:
        torch.save(state, tmp)


def load_model(path: str | Path, device: str = "cpu") -> GPT:
    """Rebuild a GPT from a checkpoint written by `train`."""
    state = torch.load(path, map_location="cpu", weights_only=False)
    model = GPT(GPTConfig(**state["model_config"]))
    model.load_state_dict(state["model"])
    model.eval()
    return model.to(device)


def train(train_data: np.ndarray, val_data: np.ndarray, model_cfg: GPTConfig, cfg: TrainConfig,
          out_dir: str | Path, meta: dict | None = None, progress: bool = True, device: str = "cpu") -> dict:
    """Train to cfg.max_iters on `device`, resuming from `out_dir/last.pt` when present. Returns a summary.
    cfg.precision must be resolved (pipeline/exec/device.py), not "auto"."""
    if cfg.precision not in ("fp32", "bf16"):
        raise ValueError(f"train.precision = {cfg.precision!r}: resolve it first (pipeline.exec.device.precision)")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(cfg.threads or os.cpu_count() or 1)
    tune_malloc()
    torch.manual_seed(cfg.seed)
    model = GPT(model_cfg).to(device)  # initialised on the CPU: the same weights on every device
    optimizer = make_optimizer(model, cfg)
    rng = np.random.default_rng(cfg.seed)
    start, best_val = 0, float("inf")
    last, best = out_dir / "last.pt", out_dir / "ckpt.pt"
    log_path = out_dir / "loss_log.csv"
    log_rows: list[dict] = []
    state = None
    if last.exists():
        try:
            state = torch.load(last, map_location="cpu", weights_only=False)
        except Exception as e:  # torn or damaged: start over rather than stop
            log.warning("%s cannot be loaded (%s): training from the start", last, e)
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        rng.bit_generator.state = state["rng"]
        torch.set_rng_state(state["torch_rng"])
        start, best_val = state["iter"], state["best_val"]
        if log_path.exists():  # keep only the rows up to the resumed iteration
            log_rows = [r for r in store.read_csv(log_path) if int(r["iter"]) < start]
    splits = {"train": train_data, "val": val_data}
    model.train()
    bar = progress_bar(range(start, cfg.max_iters), initial=start, total=cfg.max_iters, desc="train",
                       disable=not progress)
    step = training_step(model, cfg.precision, device)
    # A host sync per step would cost a GPU step more than its arithmetic: there the losses are read at evaluations.
    read_each_step = device != "cuda"
    unread: list[tuple[dict, torch.Tensor]] = []

    def read_losses() -> None:
        for r, value in unread:
            r["loss"] = f"{value.item():.4f}"
        unread.clear()

    t_last = time.perf_counter()
    for it in bar:
        lr = lr_at(it, cfg)
        for group in optimizer.param_groups:
            group["lr"] = lr
        x, y = get_batch(train_data, cfg.batch_size, model_cfg.block_size, rng, device)
        optimizer.zero_grad(set_to_none=True)
        loss = step(x, y)
        if cfg.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        now = time.perf_counter()
        row = {"iter": it, "lr": f"{lr:.6g}", "loss": "", "eval_train": "", "eval_val": "",
               "ms_per_iter": f"{(now - t_last) * 1000:.1f}"}
        unread.append((row, loss))
        if read_each_step:
            read_losses()
        t_last = now
        done = it + 1
        if done % cfg.eval_interval == 0 or done == cfg.max_iters:
            read_losses()
            losses = estimate_loss(model, splits, cfg, seed=cfg.seed + 1, device=device)
            row["eval_train"], row["eval_val"] = f"{losses['train']:.4f}", f"{losses['val']:.4f}"
            bar.write(f"iter {done}: train {losses['train']:.4f}, val {losses['val']:.4f}")
            if losses["val"] < best_val:
                best_val = losses["val"]
                save_checkpoint(best, model, optimizer, done, best_val, rng, cfg, meta or {})
            log_rows.append(row)
            store.write_csv(log_path, log_rows, LOG_COLUMNS)
            save_checkpoint(last, model, optimizer, done, best_val, rng, cfg, meta or {})
            t_last = time.perf_counter()  # evaluation time is not training time
        else:
            log_rows.append(row)
        if not unread:
            bar.set_postfix(loss=row["loss"], lr=f"{lr:.1e}", refresh=False)  # shown at the next line
    bar.close()
    store.write_csv(log_path, log_rows, LOG_COLUMNS)
    evals = [r for r in log_rows if r["eval_val"]]
    return {"iters": cfg.max_iters, "best_val": best_val,
            "final_train": float(evals[-1]["eval_train"]) if evals else None,
            "final_val": float(evals[-1]["eval_val"]) if evals else None,
            "params": model.num_params()}
