"""train: token ids → GPT checkpoint, loss log and loss curve. A finished model is reused while its checkpoint
still has the sha256 recorded in train.json; a damaged one is trained again."""
from __future__ import annotations

import logging
from dataclasses import asdict

from pipeline import paths, store
from pipeline.config import Config
from pipeline.lm.train import finished, train
from pipeline.report.plots import loss_curve
from pipeline.stages import prepare


def key(cfg: Config) -> dict:
    return {"lm": str(paths.lm_dir(cfg))}  # the directory name hashes data, model and training config


log = logging.getLogger(__name__)


def outputs(cfg: Config) -> list:
    return [paths.lm_dir(cfg) / "train.json", paths.lm_dir(cfg) / "ckpt.pt"]


def run(cfg: Config) -> dict:
    out = paths.lm_dir(cfg)
    done = out / "train.json"
    summary = finished(out)
    if summary:
        return {**summary, "files": store.file_hashes(cfg.models_dir, [out / "ckpt.pt"])}
    if done.exists() or (out / "ckpt.pt").exists():
        log.warning("%s does not match train.json (damaged or replaced): training again", out / "ckpt.pt")
        for name in ("train.json", "ckpt.pt", "last.pt", "loss_log.csv"):
            (out / name).unlink(missing_ok=True)
    train_ids, val_ids = prepare.load(cfg)
    meta = {"data": paths.corpus_identity(cfg)}
    summary = train(train_ids, val_ids, cfg.model, cfg.train, out, meta=meta)
    loss_curve(out / "loss_log.csv", out / "loss_curve.png")
    summary.update(model=asdict(cfg.model), train=asdict(cfg.train), data=meta["data"],
                   checkpoint=str(out / "ckpt.pt"), ckpt_sha256=store.sha256_file(out / "ckpt.pt"))
    store.write_json(done, summary)
    return {**summary, "files": store.file_hashes(cfg.models_dir, [out / "ckpt.pt"])}
