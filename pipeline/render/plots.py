"""PNG plots with matplotlib (Agg: no display needed), drawn to read at matrix size: small multiples, legends
outside the axes, clean audio as its own point beside the SNR axis."""
from __future__ import annotations

import io
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter  # noqa: E402

from pipeline.core.records import ALIGNED, Status
from pipeline.core import store  # noqa: E402
from pipeline.statistics.difficulty import DifficultyBin
from pipeline.scoring.utterances import GroupSummary, ScoredUtterance
from pipeline.statistics.robustness import Breakdown
from pipeline.io.conditions import SILENCE  # noqa: E402
from pipeline.statistics.robustness import snr_of  # noqa: E402


def _save(fig, path: str | Path | None = None) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    data = buf.getvalue()
    if path is not None:
        store.write_bytes(path, data)
    return data


def _grid(n: int, width: float = 3.4, height: float = 2.6, cols: int = 3, sharey: bool = True):
    cols = min(cols, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, sharey=sharey)
    fig.subplots_adjust(hspace=0.55)  # room for each panel's x label above the next row's title
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def _legend_outside(fig, axes) -> None:
    handles, labels = {}, []
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in handles:
                handles[label] = h
                labels.append(label)
    if labels:
        fig.legend([handles[k] for k in labels], labels, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8,
                   frameon=False)


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


def wer_heatmaps(summary: list[GroupSummary], rate: str = "WER") -> bytes | None:
    """One voice × engine heatmap per condition, each cell its micro WER (CER: `rate`) and 95% CI."""
    rows = [s for s in summary if s.micro_wer is not None and s.condition != SILENCE]
    if len(rows) < 2:  # one cell compares nothing: the corpus table already has its figure
        return None
    conditions = list(dict.fromkeys(s.condition for s in rows))
    voices = list(dict.fromkeys(s.voice for s in rows))
    engines = list(dict.fromkeys(s.asr for s in rows))
    top = max(s.micro_wer for s in rows) or 1.0
    cols = min(3, len(conditions))
    fig, axes = plt.subplots(math.ceil(len(conditions) / cols), cols, squeeze=False, layout="constrained",
                             figsize=(cols * (2.0 + 1.5 * len(engines)), math.ceil(len(conditions) / cols) *
                                      (1.2 + 0.55 * len(voices))))
    for ax in axes.flat[len(conditions):]:
        ax.set_visible(False)
    for ax, condition in zip(axes.flat, conditions):
        cells = {(s.voice, s.asr): s for s in rows if s.condition == condition}
        grid = np.array([[cells[(v, e)].micro_wer if (v, e) in cells else np.nan for e in engines] for v in voices])
        image = ax.imshow(grid, cmap="Reds", vmin=0, vmax=top, aspect="auto")
        for (i, v), (j, e) in ((iv, je) for iv in enumerate(voices) for je in enumerate(engines)):
            s = cells.get((v, e))
            if s is not None:
                ci = f"\n[{s.ci95_low:.2f}, {s.ci95_high:.2f}]" if s.ci95_low is not None else ""
                ax.text(j, i, f"{s.micro_wer:.3f}{ci}", ha="center", va="center", fontsize=7,
                        color="white" if s.micro_wer > 0.6 * top else "black")
        ax.set_xticks(range(len(engines)), [e or "-" for e in engines], fontsize=7, rotation=15, ha="right")
        ax.set_yticks(range(len(voices)), [v or "recordings" for v in voices], fontsize=7)
        ax.set_title(condition, fontsize=9)
    fig.colorbar(image, ax=list(axes.flat[:len(conditions)]), shrink=0.8, label=f"micro {rate}")
    return _save(fig)


def wer_vs_perplexity(utterances: list[ScoredUtterance], rate: str = "WER") -> bytes | None:
    """One panel per voice × engine; colours are conditions."""
    points: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for u in utterances:
        if u.status == Status.OK and u.perplexity is not None and u.wer is not None:
            points.setdefault(f"{u.voice or 'recordings'} | {u.asr}", {}).setdefault(u.condition, []).append(
                (u.perplexity, u.wer))
    if not points:
        return None
    fig, axes = _grid(len(points))
    for ax, (panel, by_condition) in zip(axes, sorted(points.items())):
        for condition, xy in by_condition.items():
            ax.scatter(*zip(*xy), s=12, alpha=0.7, label=condition)
        xs = [x for xy in by_condition.values() for x, _ in xy]
        log = max(xs) > 10 * min(xs)  # under a decade, a log axis has no major tick to label
        if log:
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
        else:
            ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.tick_params(axis="x", labelsize=7)
        ax.set_title(panel, fontsize=8)
        ax.set_xlabel("LM perplexity (log)" if log else "LM perplexity", fontsize=8)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(rate)
    _legend_outside(fig, axes)
    return _save(fig)


def wer_vs_snr(summary: list[GroupSummary], breakdowns: list[Breakdown], rate: str = "WER") -> bytes | None:
    """One panel per voice: WER over SNR for each engine, clean beside the axis, the breakdown SNR marked."""
    curves: dict[str, dict[str, dict]] = {}
    for s in summary:
        snr = snr_of(s.condition)
        if s.micro_wer is None or (snr is None and s.condition != "clean"):
            continue
        entry = curves.setdefault(s.voice or "recordings", {}).setdefault(s.asr, {"points": [], "clean": None})
        if snr is None:
            entry["clean"] = s.micro_wer
        else:
            entry["points"].append((snr, s.micro_wer))
    curves = {v: e for v, e in curves.items() if any(x["points"] for x in e.values())}
    if not curves:
        return None
    marks = {(b.voice or "recordings", b.asr): b for b in breakdowns}
    fig = plt.figure(figsize=(4.2 * min(3, len(curves)), 2.8 * math.ceil(len(curves) / 3)))
    outer = fig.add_gridspec(math.ceil(len(curves) / 3), min(3, len(curves)), wspace=0.35, hspace=0.5)
    axes = []
    for k, (voice, engines) in enumerate(sorted(curves.items())):
        inner = outer[k // 3, k % 3].subgridspec(1, 2, width_ratios=[6, 1], wspace=0.05)
        ax = fig.add_subplot(inner[0])
        clean_ax = fig.add_subplot(inner[1], sharey=ax)
        for n, (engine, entry) in enumerate(sorted(engines.items())):
            colour = f"C{n}"
            if entry["points"]:
                ax.plot(*zip(*sorted(entry["points"])), "o-", color=colour, label=engine)
            if entry["clean"] is not None:
                clean_ax.plot([0], [entry["clean"]], "o", color=colour)
            b = marks.get((voice, engine))
            if b is not None and b.breakdown_snr is not None:
                ax.axvline(b.breakdown_snr, color=colour, ls=":", lw=1)
                if b.ci95_low is not None:
                    ax.axvspan(b.ci95_low, b.ci95_high, color=colour, alpha=0.1)
        ax.set_title(f"{voice}: breakdown SNR dotted", fontsize=8)
        ax.set_xlabel("SNR (dB)", fontsize=8)
        ax.set_ylabel(f"micro {rate}", fontsize=8)
        ax.grid(alpha=0.3)
        clean_ax.set_xticks([0], ["clean"], fontsize=8)
        clean_ax.tick_params(labelleft=False)
        clean_ax.grid(alpha=0.3)
        axes.append(ax)
    _legend_outside(fig, axes)
    return _save(fig)


def difficulty(bins: list[DifficultyBin], rate: str = "WER") -> bytes | None:
    """WER by perplexity quartile and by sentence length, and the word failure rate by surprisal decile; one line
    per voice × engine, a panel per condition."""
    kinds = [k for k in ("perplexity", "words", "surprisal") if any(b.by == k for b in bins)]
    conditions = list(dict.fromkeys(b.condition for b in bins))
    if not bins:
        return None
    fig, axes = plt.subplots(len(kinds), len(conditions), squeeze=False,
                             figsize=(3.6 * len(conditions), 2.6 * len(kinds)), sharey=True)
    fig.subplots_adjust(hspace=0.45)
    for i, kind in enumerate(kinds):
        for j, condition in enumerate(conditions):
            ax = axes[i][j]
            chosen = [b for b in bins if b.by == kind and b.condition == condition and b.micro_wer is not None]
            names = list(dict.fromkeys(b.bin for b in bins if b.by == kind))
            for n, system in enumerate(dict.fromkeys((b.voice, b.asr) for b in chosen)):
                line = [b for b in chosen if (b.voice, b.asr) == system]
                x = [names.index(b.bin) for b in line]
                y = [b.micro_wer for b in line]
                err = [[w - (b.ci95_low if b.ci95_low is not None else w) for w, b in zip(y, line)],
                       [(b.ci95_high if b.ci95_high is not None else w) - w for w, b in zip(y, line)]]
                ax.errorbar(np.array(x) + 0.06 * n, y, yerr=err, fmt="o-", capsize=1.5, ms=3, lw=1, elinewidth=0.6,
                            color=f"C{n}",
                            label=f"{system[0] or 'recordings'} | {system[1]}")
            ax.set_xticks(range(len(names)), [nm.split(" ")[0] for nm in names], fontsize=7)
            title = {"perplexity": "perplexity quartile", "words": "words", "surprisal": "word surprisal decile"}
            ax.set_title(f"{condition}: by {title[kind]}", fontsize=8)
            ax.grid(alpha=0.3)
        axes[i][0].set_ylabel("words failed (95% CI)" if kind == "surprisal" else f"micro {rate} (95% CI)", fontsize=8)
    _legend_outside(fig, list(axes.flat))
    return _save(fig)


def measure_distributions(utterances: list[ScoredUtterance]) -> bytes | None:
    """One panel per measure column: each group's values as a box (quartiles, whiskers at p5 and p95) over its
    points, each panel on its own axis (a MOS and a cosine are on different scales)."""
    columns = list(dict.fromkeys(c for u in utterances for c in u.measures))
    groups: dict[tuple, dict[str, list[float]]] = {}
    for u in utterances:
        if u.status in ALIGNED:
            for c, v in u.measures.items():
                if v is not None:
                    groups.setdefault((u.voice, u.condition), {}).setdefault(c, []).append(v)
    columns = [c for c in columns if any(c in g for g in groups.values())]
    if not columns:
        return None
    names = sorted(groups)
    fig, axes = _grid(len(columns), width=max(3.4, 0.6 * len(names) + 1.5), cols=2, sharey=False)
    for ax, column in zip(axes, columns):
        data = [groups[g].get(column, []) for g in names]
        ax.boxplot([d or [np.nan] for d in data], whis=(5, 95), showfliers=False)
        for i, d in enumerate(data, 1):
            ax.plot(np.full(len(d), i) + np.linspace(-0.15, 0.15, len(d)), d, ".", alpha=0.4, color="C0")
        ax.set_title(column, fontsize=9)
        ax.set_xticks(range(1, len(names) + 1), [f"{v or 'recordings'}\n{c}" for v, c in names], fontsize=7,
                      rotation=30, ha="right")
        ax.yaxis.set_tick_params(labelleft=True)
    return _save(fig)


def predicted_vs_listeners(clips: list, measures: list[str], calibrations: dict) -> bytes | None:
    """Per measure, each clip's predicted value against its listeners' mean vote, one colour per system, with
    the calibration line over the range it was fitted on."""
    measures = [m for m in measures if any(c.measures.get(m) is not None for c in clips)]
    if not measures:
        return None
    fig, axes = _grid(len(measures))
    systems = sorted({c.system for c in clips})
    for ax, m in zip(axes, measures):
        for s, colour in zip(systems, plt.rcParams["axes.prop_cycle"].by_key()["color"] * 8):
            own = [c for c in clips if c.system == s and c.measures.get(m) is not None]
            ax.scatter([c.measures[m] for c in own], [c.mean for c in own], s=14, color=colour, label=s,
                       alpha=0.8)
        fit = calibrations.get(m)
        if fit is not None:
            xs = np.array([fit.low, fit.high])
            ax.plot(xs, fit.intercept + fit.slope * xs, color="#444", lw=1)
        ax.set_title(m, fontsize=9)
        ax.set_xlabel("predicted", fontsize=8)
        ax.set_ylabel("listeners' mean", fontsize=8)
        ax.tick_params(labelsize=7)
    _legend_outside(fig, axes)
    return _save(fig)
