"""score: transcripts + sentences → utterances.csv, errors.csv, confusions.csv, summary.csv/json, trn files."""
from __future__ import annotations

from dataclasses import asdict

from pipeline import paths, store
from pipeline.config import Config
from pipeline.scoring.evaluate import evaluate, summary_table, write
from pipeline.stages import sample, transcribe


def key(cfg: Config) -> dict:
    return {"score": asdict(cfg.score), "transcripts": store.sha256_file(transcribe.table_path(cfg)),
            "sentences": store.sha256_file(sample.sentences_path(cfg))}


def outputs(cfg: Config) -> list:
    return [paths.run_dir(cfg) / name for name in ("utterances.csv", "summary.json", "ref.trn", "hyp.trn")]


def run(cfg: Config) -> dict:
    sentences = {s["sentence_id"]: s for s in sample.load(cfg)}
    rows = []
    for t in transcribe.load(cfg):
        s = sentences.get(t["sentence_id"], {})
        rows.append({**t, "reference": s.get("text", ""), "perplexity": s.get("perplexity", ""),
                     "lm_tokens": s.get("lm_tokens", "")})
    results = evaluate(rows, cfg.score.normalize, cfg.score.bootstrap, cfg.score.seed)
    write(results, paths.run_dir(cfg))
    print(summary_table(results))
    return {"utterances": len(results.utterances), "failed": results.failed,
            "groups": len(results.summary)}
