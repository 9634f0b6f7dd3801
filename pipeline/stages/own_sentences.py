"""own_sentences (the sentences-file source): the user's sentences, one per line, with their perplexity when an LM of
this config was trained."""
from __future__ import annotations

from pipeline.config.run import Config
from pipeline.core.stage import Result, Stage
from pipeline.io import sentences


def run(cfg: Config, loaded: dict) -> Result:
    texts = [(f"l{i:04d}", None, text) for i, text in enumerate(loaded["sentence_file"], 1)]
    return Result({"sentences": sentences.write(cfg, loaded["lm"], texts)})


STAGE = Stage("own_sentences", "the user's sentences, with their perplexity when an LM exists",
              reads=("sentence_file",), optional=("lm",), makes=("sentences",), config=("sample.start", "device"),
              run=run, runs_when=lambda cfg: bool(cfg.sentences) and not cfg.audio_manifest)
