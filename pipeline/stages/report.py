"""report: scores and statistics → results/<run>/report.html: the group figures, comparisons, plots, and every
utterance with its alignment (rebuilt from the error events scoring saved), audio player and flags; then the
terminal summary."""
from __future__ import annotations

import base64
import io
import logging
import os
from dataclasses import asdict
from pathlib import Path

import numpy as np

from pipeline.config.run import Config
from pipeline.core import store, tables
from pipeline.core.versions import versions
from pipeline.render import html
from pipeline.run import artifacts
from pipeline.run.stage import Result, Stage
from pipeline.scoring import evaluate, statistics
from pipeline.scoring.comparisons import most_confident
from pipeline.scoring.evaluate import summary_table

log = logging.getLogger(__name__)
EMBED_LIMIT = 64 << 20  # bytes of FLAC a report carries; a bigger run's page links its audio files


def run(cfg: Config, loaded: dict) -> Result:
    from pipeline.render import plots  # matplotlib: only when a report is drawn

    scores, stats, out = loaded["scores"], loaded["statistics"], artifacts.path("report", cfg)
    figures = {"groups": plots.wer_heatmaps(scores.summary),
               "perplexity": plots.wer_vs_perplexity(scores.utterances),
               "difficulty": plots.difficulty(stats.difficulty),
               "snr": plots.wer_vs_snr(scores.summary, stats.breakdown),
               "measures": plots.measure_distributions(scores.utterances)}
    links = {name: name for name in (*tables.names(evaluate.FILES), *tables.names(statistics.FILES),
                                     "manifest.json") if (out.parent / name).exists()}
    if loaded["lm"] is not None:  # the model that scored the perplexities
        loss_log = loaded["lm"] / "loss_log.csv"
        figures["loss"] = plots.loss_curve(loss_log)
        links["training loss log"] = Path(os.path.relpath(loss_log.resolve(), out.parent.resolve())).as_posix()
    declared = (loaded["measures"] or {}).get("declared", {})
    if declared:
        links["measures.csv"] = "measures.csv"
    carried = embedded_audio(scores.utterances)
    page = html.render(html.Page(title=f"Speech evaluation: run {cfg.run}", scores=scores, stats=stats,
                                 score=cfg.score, config=asdict(cfg), versions=versions(), links=links,
                                 folder=out.parent, figures=figures, attention=loaded["attention"], measures=declared,
                                 audio=carried))
    store.write_text(out, page)
    if carried is None:
        log.warning("the report links its audio instead of carrying it (more than %d MB as FLAC): keep it in %s, "
                    "beside the audio folder", EMBED_LIMIT >> 20, out.parent)
    print(summary_table(scores.summary, len(scores.utterances), most_confident(stats.comparisons),
                        macro_first=cfg.score.headline == "macro"))
    print(f"report: {out}")
    return Result({"report": str(out)})


def embedded_audio(utterances) -> dict[str, tuple[str, str]] | None:
    """Each readable wav the page plays, as lossless FLAC in base64, so that the report plays wherever it is
    copied; None when that would pass EMBED_LIMIT, and the page links the files instead."""
    import soundfile as sf

    from pipeline.io import audio

    carried, total = {}, 0
    for path in dict.fromkeys(u.audio_path for u in utterances if u.audio_path):
        try:
            samples, sr = audio.read(path)
        except audio.BadAudio:
            continue
        buf = io.BytesIO()
        sf.write(buf, np.clip(samples, -1.0, 1.0), sr, format="FLAC", subtype="PCM_16")
        total += buf.tell()
        if total > EMBED_LIMIT:
            return None
        carried[path] = (f"a{len(carried)}", base64.b64encode(buf.getvalue()).decode())
    return carried


STAGE = Stage("report", "one self-contained HTML page of the scores and statistics; the terminal summary",
              reads=("scores", "statistics"), optional=("lm", "attention", "measures"),
              makes=("report",), config=("run",), run=run)
