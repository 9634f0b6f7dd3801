"""train: token ids → GPT checkpoint, loss log and loss curve. A finished model is reused."""
from __future__ import annotations

from dataclasses import asdict

from pipeline import paths, store
from pipeline.config import Config
from pipeline.lm.train import train
from pipeline.report.plots import loss_curve
from pipeline.stages import prepare


def key(cfg: Config) -> dict:
    return {"lm": str(paths.lm_dir(cfg))}  # the directory name hashes data, model and training config


def outputs(cfg: Config) -> list:
    return [paths.lm_dir(cfg) / "train.json"]


def run(cfg: Config) -> dict:
    out = paths.lm_dir(cfg)
    done = out / "train.json"
    if done.exists():
        return {**store.read_json(done), "files": store.file_hashes(cfg.models_dir, [out / "ckpt.pt"])}
    train_ids, val_ids = prepare.load(cfg)
    meta = {"data": paths.corpus_identity(cfg)}
    summary = train(train_ids, val_ids, cfg.model, cfg.train, out, meta=meta)
    loss_curve(out / "loss_log.csv", out / "loss_curve.png")
    summary.update(model=asdict(cfg.model), train=asdict(cfg.train), data=meta["data"],
                   checkpoint=str(out / "ckpt.pt"))
    store.write_json(done, summary)
    return {**summary, "files": store.file_hashes(cfg.models_dir, [out / "ckpt.pt"])}
