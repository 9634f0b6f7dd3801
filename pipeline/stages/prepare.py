"""prepare: corpus text → train.bin / val.bin (uint16 GPT-2 ids), as nanoGPT lays them out."""
from __future__ import annotations

import numpy as np

from pipeline import paths, store
from pipeline.config import Config
from pipeline.lm import corpus


def key(cfg: Config) -> dict:
    return paths.corpus_identity(cfg)


def outputs(cfg: Config) -> list:
    return [paths.data_dir(cfg) / "meta.json"]


def run(cfg: Config) -> dict:
    out = paths.data_dir(cfg)
    meta_path = out / "meta.json"
    if meta_path.exists():
        return store.read_json(meta_path)
    if cfg.data.train_bin:
        train, val = corpus.load_bin(cfg.data.train_bin), corpus.load_bin(cfg.data.val_bin)
    else:
        train, val = corpus.split_tokens(corpus.load_text(cfg.data.corpus), cfg.data.val_fraction)
    for name, ids in (("train.bin", train), ("val.bin", val)):
        store.write_bytes(out / name, ids.astype(np.uint16).tobytes())
    meta = {"source": paths.corpus_identity(cfg), "train_tokens": int(len(train)), "val_tokens": int(len(val)),
            "tokenizer": "gpt2 (r50k_base)"}
    store.write_json(meta_path, meta)
    return meta


def load(cfg: Config) -> tuple[np.ndarray, np.ndarray]:
    out = paths.data_dir(cfg)
    return corpus.load_bin(out / "train.bin"), corpus.load_bin(out / "val.bin")
