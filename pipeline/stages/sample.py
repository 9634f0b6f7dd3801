"""sample (the LM source): GPT checkpoint → sentences cut from its samples, with their perplexity."""
from __future__ import annotations

from pipeline.config.run import Config
from pipeline.core import store
from pipeline.lm import sentences
from pipeline.run import artifacts
from pipeline.run.stage import Outcome, Stage


def run(cfg: Config, loaded: dict) -> Outcome:
    from pipeline.lm.sampler import generate, split_sentences
    from pipeline.lm.trainer import load_model

    s = cfg.sample
    model = load_model(loaded["lm"] / "ckpt.pt", cfg.device)
    samples = generate(model, s)
    store.write_json(artifacts.files("sentences", cfg)[1], samples)  # PA6a's file
    texts = [(f"s{k:02d}-{j:02d}", k, text) for k, sample in enumerate(samples)
             for j, text in enumerate(split_sentences(sample, s.speaker_tags, s.min_words))]
    return Outcome({"sentences": sentences.write(*artifacts.sentence_tables(cfg), loaded["lm"], texts,
                                                       device=cfg.device, prompt=cfg.sample.start)}, device=cfg.device)


STAGE = Stage("sample", "sentences cut from the LM's samples, with their perplexity",
              reads=("lm",), makes=("sentences",), config=("sample", "device"), run=run)
