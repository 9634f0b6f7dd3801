"""sample: GPT checkpoint → sentences with their perplexity (or the user's own sentences)."""
from __future__ import annotations

import logging
from dataclasses import asdict
from pathlib import Path

from pipeline import inputs, manifest, paths, store
from pipeline.config import Config
from pipeline.lm import tokenizer
from pipeline.lm.perplexity import perplexity
from pipeline.lm.sample import REFERENCE_SENTENCES, generate, split_sentences
from pipeline.lm.train import finished, load_model

log = logging.getLogger(__name__)
COLUMNS = ["sentence_id", "sample", "text", "lm_tokens", "perplexity"]


def sentences_path(cfg: Config) -> Path:
    return paths.run_dir(cfg) / "sentences.csv"


def score(model, text: str, start_ids: list[int]) -> tuple[int, float | str]:
    ids = tokenizer.encode(text)
    if model is None or not ids:
        return len(ids), ""
    return len(ids), round(perplexity(model, ids, context=start_ids), 4)


def key(cfg: Config) -> dict:
    ckpt = paths.lm_dir(cfg) / "ckpt.pt"
    return {"sample": asdict(cfg.sample), "lm": str(paths.lm_dir(cfg)) if ckpt.exists() else None,
            "sentences": store.sha256_file(cfg.sentences) if cfg.sentences else None,
            "audio_manifest": store.sha256_file(cfg.audio_manifest) if cfg.audio_manifest else None}


def outputs(cfg: Config) -> list:
    return [sentences_path(cfg)]


def run(cfg: Config) -> dict:
    out = paths.run_dir(cfg)
    ckpt = paths.lm_dir(cfg) / "ckpt.pt"
    model = load_model(ckpt) if finished(paths.lm_dir(cfg)) else None
    start_ids = tokenizer.encode(cfg.sample.start)  # perplexity is conditioned on the sampling prompt
    if cfg.audio_manifest:
        rows = [{"sentence_id": r["id"], "sample": "", "text": r["reference"]}
                for r in manifest.read(cfg.audio_manifest)]
    elif cfg.sentences:
        rows = [{"sentence_id": f"l{i:04d}", "sample": "", "text": text}
                for i, text in enumerate(inputs.sentences(cfg.sentences), 1)]
    elif model is None:
        raise FileNotFoundError(f"no intact trained model at {ckpt}; run the train stage first")
    else:
        s = cfg.sample
        samples = generate(model, s.start, s.num_samples, s.max_new_tokens, s.temperature, s.top_k, s.seed)
        store.write_json(out / "sampled_sentences.json", samples)  # PA6a's file: the raw samples
        rows = [{"sentence_id": f"s{k:02d}-{j:02d}", "sample": k, "text": text}
                for k, sample in enumerate(samples)
                for j, text in enumerate(split_sentences(sample, s.speaker_tags, s.min_words))]
    if model is None:
        log.warning("no intact trained model at %s: perplexity is left empty", ckpt)
    for row in rows:
        row["lm_tokens"], row["perplexity"] = score(model, row["text"], start_ids)
    store.write_csv(sentences_path(cfg), rows, COLUMNS)
    if model is not None:
        ref_rows = []
        for name, text in REFERENCE_SENTENCES.items():
            n, ppl = score(model, text, start_ids)
            ref_rows.append({"sentence_id": name, "sample": "", "text": text, "lm_tokens": n, "perplexity": ppl})
        store.write_csv(out / "reference_perplexity.csv", ref_rows, COLUMNS)
    return {"sentences": len(rows)}


def load(cfg: Config) -> list[dict]:
    return store.read_csv(sentences_path(cfg))
