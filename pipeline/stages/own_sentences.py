"""own_sentences (the sentences-file source): the user's sentences, one per line, with their perplexity when an LM of
this config was trained."""
from __future__ import annotations

from pipeline.config.run import Config
from pipeline.lm import sentences
from pipeline.run import artifacts
from pipeline.run.stage import Outcome, Stage


def run(cfg: Config, loaded: dict) -> Outcome:
    texts = [(f"l{i:04d}", None, text) for i, text in enumerate(loaded["sentence_file"], 1)]
    return Outcome({"sentences": sentences.write(*artifacts.sentence_tables(cfg), loaded["lm"], texts,
                                                       device=cfg.device, prompt=cfg.sample.start)})


STAGE = Stage("own_sentences", "the user's sentences, with their perplexity when an LM exists",
              reads=("sentence_file",), optional=("lm",), makes=("sentences",), config=("sample.start", "device"),
              run=run, runs_when=lambda cfg: bool(cfg.sentences) and not cfg.audio_manifest)
