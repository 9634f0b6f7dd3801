"""report: results CSVs → results/<run>/report.html, plus the terminal summary."""
from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

from pipeline import paths, store
from pipeline.config import Config
from pipeline.report import html, plots
from pipeline.runner import versions


def key(cfg: Config) -> dict:
    run = paths.run_dir(cfg)
    return {"inputs": [store.sha256_file(run / n) for n in ("utterances.csv", "summary.csv")],
            "audio_dir": cfg.audio_dir}


def outputs(cfg: Config) -> list:
    return [paths.run_dir(cfg) / "report.html"]


def run(cfg: Config) -> dict:
    run_dir = paths.run_dir(cfg)
    utterances = store.read_csv(run_dir / "utterances.csv")
    summary = store.read_csv(run_dir / "summary.csv")
    figures = {"WER per voice × engine": plots.wer_by_group(summary),
               "WER vs perplexity": plots.wer_vs_perplexity(utterances),
               "WER vs SNR": plots.wer_vs_snr(summary)}
    links = {name: name for name in ("utterances.csv", "errors.csv", "confusions.csv", "summary.csv",
                                     "summary.json", "dtl.txt", "pralign.txt", "ref.trn", "hyp.trn", "manifest.json")}
    loss_log = paths.lm_dir(cfg) / "loss_log.csv"
    if loss_log.exists() and not cfg.sentences and not cfg.audio_manifest:
        figures["training loss"] = plots.loss_curve(loss_log)
        links["training loss log"] = Path(os.path.relpath(loss_log.resolve(), run_dir.resolve())).as_posix()
    page = html.render(f"Speech evaluation: run {cfg.run}", summary, utterances, figures, asdict(cfg),
                       versions(), links, run_dir)
    out = run_dir / "report.html"
    store.write_text(out, page)
    print(f"report: {out}")
    return {"report": str(out)}
