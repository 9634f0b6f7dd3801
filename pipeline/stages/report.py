"""report: scores and statistics → results/<run>/report.html: the group figures, comparisons, plots, and every
utterance with its alignment (rebuilt from the error events scoring saved), audio player and flags; then the
terminal summary."""
from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

from pipeline.config.run import Config
from pipeline.core import artifacts, store, tables
from pipeline.core.stage import Result, Stage
from pipeline.core.versions import versions
from pipeline.render import html
from pipeline.scoring import evaluate, statistics
from pipeline.scoring.comparisons import most_confident
from pipeline.scoring.evaluate import summary_table


def run(cfg: Config, loaded: dict) -> Result:
    from pipeline.render import plots  # matplotlib: only when a report is drawn

    scores, stats, out = loaded["scores"], loaded["statistics"], artifacts.path("report", cfg)
    figures = {"groups": plots.wer_heatmaps(scores["summary"]),
               "perplexity": plots.wer_vs_perplexity(scores["utterances"]),
               "difficulty": plots.difficulty(stats["difficulty"]),
               "snr": plots.wer_vs_snr(scores["summary"], stats["breakdown"]),
               "measures": plots.measure_distributions(scores["utterances"])}
    links = {name: name for name in (*tables.names(evaluate.FILES), *tables.names(statistics.FILES),
                                     "manifest.json")}
    if loaded["lm"] is not None:  # the model that scored the perplexities
        loss_log = loaded["lm"] / "loss_log.csv"
        figures["loss"] = plots.loss_curve(loss_log)
        links["training loss log"] = Path(os.path.relpath(loss_log.resolve(), out.parent.resolve())).as_posix()
    declared = (loaded["measures"] or {}).get("declared", {})
    if declared:
        links["measures.csv"] = "measures.csv"
    page = html.render(f"Speech evaluation: run {cfg.run}", scores, stats, figures, asdict(cfg), versions(), links,
                       out.parent, loaded["attention"], declared)
    store.write_text(out, page)
    print(summary_table(scores["summary"], len(scores["utterances"]), most_confident(stats["comparisons"])))
    print(f"report: {out}")
    return Result({"report": str(out)})


STAGE = Stage("report", "one self-contained HTML page of the scores and statistics; the terminal summary",
              reads=("scores", "statistics"), optional=("lm", "attention", "measures"),
              makes=("report",), config=("run",), run=run)
