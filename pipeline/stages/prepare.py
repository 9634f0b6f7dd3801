"""prepare: corpus text → train.bin / val.bin (uint16 GPT-2 ids), as nanoGPT lays them out."""
from __future__ import annotations

import numpy as np

from pipeline.config import paths
from pipeline.config.run import Config
from pipeline.core import store
from pipeline.io import inputs
from pipeline.lm import corpus
from pipeline.run.stage import Outcome, Stage


def run(cfg: Config, loaded: dict) -> Outcome:
    out = paths.data_dir(cfg)
    meta_path = out / "meta.json"
    meta = store.read_json_or_empty(meta_path)
    recorded = meta.get("sha256", {})
    if all((out / n).exists() and recorded.get(n) == store.sha256_stat(out / n) for n in ("train.bin", "val.bin")):
        return Outcome(meta)  # made by an earlier run with the same corpus, and intact
    if cfg.data.train_bin:
        train, val = corpus.load_bin(cfg.data.train_bin), corpus.load_bin(cfg.data.val_bin)
    else:
        train, val = corpus.split_tokens(corpus.load_text(cfg.data.corpus), cfg.data.val_fraction)
        for part, ids in (("its training part", train), ("its validation part", val)):
            inputs.check_token_count(ids, f"--corpus ({part}, data.val_fraction = {cfg.data.val_fraction})",
                                     cfg.data.corpus, cfg.model.block_size + 2)
    for name, ids in (("train.bin", train), ("val.bin", val)):
        store.write_bytes(out / name, ids.astype(np.uint16).tobytes())
    meta = {"source": paths.corpus_identity(cfg), "train_tokens": int(len(train)), "val_tokens": int(len(val)),
            "tokenizer": "gpt2 (r50k_base)",
            "sha256": {n: store.sha256_file(out / n) for n in ("train.bin", "val.bin")}}
    store.write_json(meta_path, meta)
    return Outcome(meta)


STAGE = Stage("prepare", "the corpus as GPT-2 token ids, split for training and validation",
              reads=("corpus",), makes=("tokens",), config=("data", "model.block_size"), run=run,
              runs_when=lambda cfg: not cfg.sentences and not cfg.audio_manifest)
