"""Whether a trained model is there and intact, without importing torch: a rerun with every stage up to date
asks this and need not pay torch's import."""
from __future__ import annotations

from pathlib import Path

from pipeline.core import store


def finished(out: Path) -> dict:
    """train.json when the checkpoint it describes is intact, else {}."""
    done = store.read_json_or_empty(out / "train.json")
    ckpt = out / "ckpt.pt"
    if not done or not ckpt.exists():
        return {}
    if "ckpt_sha256" not in done:  # a train.json that records no hash: trusted if its checkpoint loads, then sealed
        from pipeline.lm.trainer import load_model

        try:
            load_model(ckpt)
        except Exception:
            return {}
        done["ckpt_sha256"] = store.sha256_file(ckpt)
        store.write_json(out / "train.json", done)
    return done if done["ckpt_sha256"] == store.sha256_stat(ckpt) else {}
