"""score: sentences + transcripts (+ the measures of their audio) → utterances.csv, errors.csv, confusions.csv,
summary.csv/json, trn files. summary.json says what the run's WER is comparable with (config/recipes.py)."""
from __future__ import annotations

import os
from pathlib import Path

from pipeline.asr.transcriber import Transcript
from pipeline.config import recipes
from pipeline.config.run import Config
from pipeline.core.manifest import Computation
from pipeline.lm.sentences import Sentence
from pipeline.run import artifacts
from pipeline.run.stage import Outcome, Stage
from pipeline.scoring.config import SCORING_REVISION
from pipeline.scoring.evaluate import evaluate
from pipeline.scoring.files import write
from pipeline.scoring.utterances import Pair


def from_run(path: str, run_dir: Path) -> str:
    """An audio path as utterances.csv holds it: relative to the run folder, when the audio lies in the folder the
    run was started from (the tool's own audio/, recordings beside the project), else absolute; so that
    `Path(run_folder) / audio_path` finds it from anywhere, and the two folders can move together."""
    if not path:
        return ""
    absolute = Path(path).resolve()
    if absolute.is_relative_to(Path.cwd().resolve()):
        return Path(os.path.relpath(absolute, run_dir.resolve())).as_posix()
    return str(absolute)


def heard(t: Transcript, s: Sentence | None, measures: dict[str, float | None], audio_path: str,
          speaker_reference: str = "") -> Pair:
    """What scoring reads of a transcript beside its sentence (None: a sentence the run no longer has, scored against
    nothing), its audio and its speaker reference named as the scores name them."""
    return Pair(sentence_id=t.sentence_id, reference=s.text if s else "", hypothesis=t.hypothesis, voice=t.voice,
                asr=t.asr, condition=t.condition, status=t.status, error=t.error, audio_path=audio_path,
                audio_seconds=t.audio_seconds, tts_seconds=t.tts_seconds, asr_seconds=t.asr_seconds,
                level_dbfs=t.level_dbfs, audio_sha256=t.audio_sha256, perplexity=s.perplexity if s else None,
                lm_tokens=s.lm_tokens if s else None, word_surprisal=tuple(s.word_surprisal) if s else (),
                measures=measures, speaker_reference=speaker_reference)


def run(cfg: Config, loaded: dict) -> Outcome:
    sentences: dict[str, Sentence] = {s.sentence_id: s for s in loaded["sentences"]}
    transcripts: list[Transcript] = loaded["transcripts"]
    measured = {m.id: m for m in loaded["measures"].rows} if loaded["measures"] else {}
    out = artifacts.path("scores", cfg).parent
    pairs = []
    for t in transcripts:
        m = measured.get(t.speech_id)
        pairs.append(heard(t, sentences.get(t.sentence_id), m.values if m else {},
                                audio_path=from_run(t.audio_path, out),
                                speaker_reference=from_run(m.speaker_reference, out) if m else ""))
    results = evaluate(pairs, cfg.score, comparable=recipes.of(cfg), language=cfg.asr.language)
    write(results, out)
    return Outcome({"utterances": len(results.utterances), "failed": results.failed, "groups": len(results.summary)},
                  failed_rows=results.failed)


STAGE = Stage("score", "each transcript aligned with its sentence: WER, error events, group figures",
              reads=("sentences", "transcripts"), optional=("measures",), makes=("scores",),
              config=("score", "recipe", "asr"), run=run,
              # the revision joins the key as well as the manifest: scores of an older revision are made again, where
              # the manifest alone would have claimed the new revision for them
              environment=lambda cfg: {"scoring_revision": SCORING_REVISION},
              computation=lambda cfg: Computation(scoring_revision=SCORING_REVISION))
