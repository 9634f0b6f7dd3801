"""PNG plots with matplotlib (Agg: no display needed)."""
from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from pipeline import store  # noqa: E402
from pipeline.records import GroupSummary, ScoredUtterance  # noqa: E402


def _save(fig, path: str | Path | None) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    data = buf.getvalue()
    if path is not None:
        store.write_bytes(path, data)
    return data


def loss_curve(log_csv: str | Path, path: str | Path | None = None) -> bytes:
    rows = store.read_csv(log_csv)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot([int(r["iter"]) for r in rows], [float(r["loss"]) for r in rows], lw=0.6, alpha=0.5, label="batch")
    evals = [r for r in rows if r["eval_val"]]
    its = [int(r["iter"]) + 1 for r in evals]
    ax.plot(its, [float(r["eval_train"]) for r in evals], "o-", label="train (eval)")
    ax.plot(its, [float(r["eval_val"]) for r in evals], "s-", label="val (eval)")
    ax.set_xlabel("iteration")
    ax.set_ylabel("cross-entropy (nats)")
    ax.legend()
    ax.grid(alpha=0.3)
    return _save(fig, path)


def wer_vs_perplexity(utterances: list[ScoredUtterance]) -> bytes | None:
    points: dict[str, list[tuple[float, float]]] = {}
    for u in utterances:
        if u.status == "ok" and u.perplexity is not None and u.wer is not None:
            points.setdefault(f"{u.voice} | {u.asr} | {u.condition}", []).append((u.perplexity, u.wer))
    if not points:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for label, xy in sorted(points.items()):
        ax.scatter(*zip(*xy), s=14, alpha=0.7, label=label)
    ax.set_xscale("log")
    ax.set_xlabel("LM perplexity (log scale)")
    ax.set_ylabel("WER")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return _save(fig, None)


def wer_by_group(summary: list[GroupSummary]) -> bytes | None:
    rows = [s for s in summary if s.micro_wer is not None]
    if not rows:
        return None
    labels = [f"{s.voice}\n{s.asr}\n{s.condition}" for s in rows]
    wer = [s.micro_wer for s in rows]
    low = [w - (s.ci95_low if s.ci95_low is not None else w) for w, s in zip(wer, rows)]
    high = [(s.ci95_high if s.ci95_high is not None else w) - w for w, s in zip(wer, rows)]
    fig, ax = plt.subplots(figsize=(max(4, 1.3 * len(rows)), 3.5))
    ax.bar(range(len(rows)), wer, yerr=[low, high], capsize=4, color="#4c72b0")
    ax.set_xticks(range(len(rows)), labels, fontsize=7)
    ax.set_ylabel("micro WER (95% bootstrap CI)")
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, None)


def wer_vs_snr(summary: list[GroupSummary]) -> bytes | None:
    """One curve per voice × engine over the noise conditions (clean drawn at the right as ∞)."""
    curves: dict[str, list[tuple[float, float]]] = {}
    for s in summary:
        wer, cond = s.micro_wer, s.condition
        if wer is None or not (cond == "clean" or cond.startswith("noise:snr=")):
            continue
        snr = float(cond.split("=")[1]) if cond != "clean" else None
        curves.setdefault(f"{s.voice} | {s.asr}", []).append((snr, wer))
    if not any(snr is not None for pts in curves.values() for snr, _ in pts):
        return None
    top = max(snr for pts in curves.values() for snr, _ in pts if snr is not None) + 10
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for label, pts in sorted(curves.items()):
        pts = sorted((top if snr is None else snr, w) for snr, w in pts)
        ax.plot(*zip(*pts), "o-", label=label)
    ax.set_xlabel(f"SNR (dB); clean plotted at {top:g}")
    ax.set_ylabel("micro WER")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return _save(fig, None)
