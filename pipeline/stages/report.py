"""report: scores → results/<run>/report.html: the group figures, plots, and every utterance with its alignment
(rebuilt from the error events scoring saved), audio player and flags."""
from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

from pipeline import artifacts, store
from pipeline.config import Config
from pipeline.report import html, plots
from pipeline.stage import Result, Stage
from pipeline.versions import versions


def run(cfg: Config, loaded: dict) -> Result:
    scores, out = loaded["scores"], artifacts.path("report", cfg)
    figures = {"WER per voice × engine": plots.wer_by_group(scores["summary"]),
               "WER vs perplexity": plots.wer_vs_perplexity(scores["utterances"]),
               "WER vs SNR": plots.wer_vs_snr(scores["summary"])}
    links = {name: name for name in (*artifacts.SCORE_FILES, "manifest.json")}
    if loaded["lm"] is not None:  # the model that scored the perplexities
        loss_log = loaded["lm"] / "loss_log.csv"
        figures["training loss"] = plots.loss_curve(loss_log)
        links["training loss log"] = Path(os.path.relpath(loss_log.resolve(), out.parent.resolve())).as_posix()
    page = html.render(f"Speech evaluation: run {cfg.run}", scores["summary"], scores["utterances"],
                       scores["events"], figures, asdict(cfg), versions(), links, out.parent)
    store.write_text(out, page)
    print(f"report: {out}")
    return Result({"report": str(out)})


STAGE = Stage("report", "one self-contained HTML page of the scores", reads=("scores",), optional=("lm",),
              makes=("report",), config=("run",), run=run)
