"""report: scores and statistics → results/<run>/report.html, every section of pipeline/render/sections/ in turn
(the group figures, comparisons, plots, and every utterance with its alignment, audio player and flags); and the
terminal summary at the end of every run."""
from __future__ import annotations

import logging
import os
from pathlib import Path

from pipeline.config.run import LANGUAGES_TABLE, Config, command_name, language_run, table_folder
from pipeline.core import store, tables
from pipeline.core.versions import versions
from pipeline.render import html
from pipeline.run import artifacts
from pipeline.run.stage import Outcome, Stage
from pipeline import statistics
from pipeline.scoring import files as scored
from pipeline.statistics.comparisons import most_confident
from pipeline.render.terminal import failures, summary_table

log = logging.getLogger(__name__)


def run(cfg: Config, loaded: dict) -> Outcome:
    scores, stats, out = loaded["scores"], loaded["statistics"], artifacts.path("report", cfg)
    links = {name: name for name in (*tables.names(scored.FILES), *tables.names(statistics.files()),
                                     "manifest.json") if (out.parent / name).exists()}
    loss_log = loaded["lm"] / "loss_log.csv" if loaded["lm"] is not None else None  # the LM that scored perplexity
    if loss_log:
        links["training loss log"] = Path(os.path.relpath(loss_log.resolve(), out.parent.resolve())).as_posix()
    declared = loaded["measures"].declared if loaded["measures"] else {}
    if declared:
        links["measures.csv"] = "measures.csv"
    carried = html.embedded_audio([p for u in scores.utterances for p in (u.audio_path, u.speaker_reference)],
                                  out.parent)
    page = html.render(html.Page(title=f"Speech evaluation: run {cfg.run}", scores=scores, stats=stats,
                                 score=cfg.score, config=loaded["plan"], versions=versions(), links=links,
                                 folder=out.parent, loss_log=loss_log, attention=loaded["attention"],
                                 measures=declared, audio=carried, comparable=scores.comparable.line,
                                 listening=listened(cfg), **siblings(cfg)))
    store.write_text(out, page)
    if carried is None:
        log.warning("the report links its audio instead of carrying it (more than %d MB as FLAC): keep it in %s, "
                    "beside the audio folder", html.EMBED_LIMIT >> 20, out.parent)
    return Outcome({"report": str(out)})


def siblings(cfg: Config) -> dict:
    """The runs of the command in several languages this run is one of (language → name) and the link to their
    table, beside this run's folder; nothing for a run alone."""
    command = command_name(cfg)
    if not command:
        return {}
    return {"languages": {lang: language_run(command, lang) for lang in cfg.languages},
            "languages_table": f"../{table_folder(command)}/{LANGUAGES_TABLE}"}


def listened(cfg: Config):
    """What the listeners of `listening` said so far, or None."""
    if not cfg.listening:
        return None
    from pipeline.listen import analysis, database

    conn = database.connect(cfg.listening)
    try:
        return analysis.analyse(conn)
    finally:
        conn.close()


def environment(cfg: Config) -> dict:
    """Every report section, a plugin's too; and the listening test's votes so far, which a path does not name."""
    from pipeline.listen import database

    return {"sections": html.SECTIONS.names(), **({"listening": database.fingerprint(cfg.listening)}
                                                  if cfg.listening else {})}


def epilogue(cfg: Config) -> str:
    """The end of every run, up to date or not: the group figures, the rows that failed, what the WER compares
    with, and where the report is."""
    scores, stats = artifacts.ARTIFACTS["scores"].load(cfg), artifacts.ARTIFACTS["statistics"].load(cfg)
    out = artifacts.path("report", cfg)
    table = summary_table(scores.summary, len(scores.utterances), most_confident(stats["comparisons"]),
                          macro_first=cfg.score.headline == "macro", rate=scores.rate)
    failed = failures(scores.utterances, str(out.parent / "utterances.csv"))
    comparable = scores.comparable.line
    parts = (table, failed, comparable and f"{scores.rate}: {comparable}", f"report: {out}")
    return "\n".join(part for part in parts if part)


STAGE = Stage("report", "one self-contained HTML page of the scores and statistics; the terminal summary",
              reads=("scores", "statistics"), optional=("lm", "attention", "measures"),
              makes=("report",), config=("run", "listening", "languages"), run=run, epilogue=epilogue,
              environment=environment)
