"""score: sentences + transcripts (+ the measures of their audio) → utterances.csv, errors.csv, confusions.csv,
summary.csv/json, trn files."""
from __future__ import annotations

from pipeline.config.run import Config
from pipeline.core.records import Pair, Sentence, Transcript
from pipeline.run import artifacts
from pipeline.run.stage import Result, Stage
from pipeline.scoring.evaluate import evaluate, write


def run(cfg: Config, loaded: dict) -> Result:
    sentences: dict[str, Sentence] = {s.sentence_id: s for s in loaded["sentences"]}
    transcripts: list[Transcript] = loaded["transcripts"]
    measured = {(m.sentence_id, m.voice, m.condition): m.values for m in (loaded["measures"] or {}).get("rows", ())}
    pairs = [Pair.heard(t, sentences.get(t.sentence_id), measured.get((t.sentence_id, t.voice, t.condition), {}))
             for t in transcripts]
    results = evaluate(pairs, cfg.score)
    write(results, artifacts.path("scores", cfg).parent)
    return Result({"utterances": len(results.utterances), "failed": results.failed, "groups": len(results.summary)})


STAGE = Stage("score", "each transcript aligned with its sentence: WER, error events, group figures",
              reads=("sentences", "transcripts"), optional=("measures",), makes=("scores",), config=("score",), run=run)
