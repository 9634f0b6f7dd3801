"""attention: sentences + the trained LM → results/<run>/attention/: each sentence's causal attention weights
per layer and head (lm/attention_maps.py), one npz per sentence, for the report's heatmaps and for users who want
the numbers. A run of the user's sentences or recordings without a trained model of this config has none to show
and skips it."""
from __future__ import annotations

import io

import numpy as np

from pipeline.config.run import Config
from pipeline.core import store
from pipeline.core.names import file_name, inside
from pipeline.run import artifacts
from pipeline.run.stage import Outcome, Stage


def run(cfg: Config, loaded: dict) -> Outcome:
    index_path = artifacts.path("attention", cfg)
    out, index = index_path.parent, {}
    if loaded["lm"] is not None:
        from pipeline.lm import attention_maps, tokenizer
        from pipeline.lm.trainer import load_model

        model = load_model(loaded["lm"] / "ckpt.pt", cfg.device)
        context = tokenizer.encode(cfg.sample.start)
        for s in loaded["sentences"]:
            tokens, weights = attention_maps.sentence(model, s.text, context)
            buf = io.BytesIO()
            np.savez_compressed(buf, tokens=np.array(tokens), weights=weights.astype(np.float32),
                                mean_over_heads=weights.mean(axis=1).astype(np.float32))
            name = f"{file_name(s.sentence_id)}.npz"
            store.write_bytes(inside(out, name), buf.getvalue())
            index[s.sentence_id] = {"file": name, "tokens": tokens, "layers": int(weights.shape[0]),
                                    "heads": int(weights.shape[1])}
    store.write_json(index_path, {"prompt": cfg.sample.start, "sentences": index})
    return Outcome({"sentences": len(index)}, device=cfg.device if index else None)


STAGE = Stage("attention", "each sentence's causal attention weights per layer and head, under the trained LM",
              reads=("sentences",), optional=("lm",), makes=("attention",), config=("sample.start", "device"),
              run=run, runs_when=lambda cfg: not (cfg.audio_manifest or cfg.sentences)
              or artifacts.ARTIFACTS["lm"].exists(cfg))
