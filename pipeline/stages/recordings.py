"""sample (the audio-manifest source): existing recordings and their references, as the sentences and speech
that synthesis would otherwise make."""
from __future__ import annotations

from pipeline.config.run import Config
from pipeline.core import artifacts, records
from pipeline.core.records import Speech
from pipeline.core.stage import Result, Stage
from pipeline.io import sentences


def run(cfg: Config, loaded: dict) -> Result:
    rows = loaded["audio_manifest"]
    n = sentences.write(cfg, loaded["lm"], [(r["id"], None, r["reference"]) for r in rows])
    records.write_csv(artifacts.path("speech", cfg), Speech,
                      [Speech(sentence_id=r["id"], voice="", condition="clean", audio_path=r["audio_path"],
                              audio_seconds=None, tts_seconds=None, status="ok", error="",
                              speaker_reference=r["speaker_reference"]) for r in rows])
    return Result({"sentences": n, "recordings": len(rows)})


STAGE = Stage("recordings", "the user's recordings and their references",
              reads=("audio_manifest",), optional=("lm",), makes=("sentences", "speech"), config=("sample.start", "device"),
              run=run, runs_when=lambda cfg: bool(cfg.audio_manifest))
