"""train: token ids → GPT checkpoint, loss log and loss curve. A finished model is reused while its checkpoint
still has the sha256 recorded in train.json; a damaged one is trained again."""
from __future__ import annotations

import logging
from dataclasses import asdict

from pipeline.config import paths
from pipeline.config.run import Config
from pipeline.core import store
from pipeline.core.manifest import Computation
from pipeline.exec import device
from pipeline.lm.checkpoint import finished
from pipeline.run.stage import Outcome, Stage

log = logging.getLogger(__name__)


def run(cfg: Config, loaded: dict) -> Outcome:
    out = paths.lm_dir(cfg)
    summary = finished(out)
    if not summary:
        if (out / "train.json").exists() or (out / "ckpt.pt").exists():
            log.warning("%s does not match train.json (damaged or replaced): training again", out / "ckpt.pt")
            for name in ("train.json", "ckpt.pt", "last.pt", "loss_log.csv"):
                (out / name).unlink(missing_ok=True)
        from pipeline.lm.trainer import train  # torch: only when training

        if cfg.train.precision == "bf16" and (why := device.software_bf16(cfg.device, cfg.models_dir)):
            log.warning("train.precision = bf16: %s, so training takes many times as long as in fp32; "
                        "--precision auto or fp32 trains at fp32's speed", why)
        train_ids, val_ids = loaded["tokens"]
        meta = {"data": paths.corpus_identity(cfg)}
        summary = train(train_ids, val_ids, cfg.model, cfg.train, out, meta=meta, device=cfg.device)
        summary.update(model=asdict(cfg.model), train=asdict(cfg.train), data=meta["data"], device=cfg.device,
                       checkpoint=str(out / "ckpt.pt"), ckpt_sha256=store.sha256_file(out / "ckpt.pt"))
        store.write_json(out / "train.json", summary)
    return Outcome(summary, store.file_hashes(cfg.models_dir, [out / "ckpt.pt"]), summary.get("device", "cpu"))


STAGE = Stage("train", "PA6a's GPT trained on the tokens; the best checkpoint by validation loss",
              reads=("tokens",), makes=("lm",), config=("model", "train", "device"), run=run,
              # what precision auto chose from
              computation=lambda cfg: Computation(matmul_gflops=device.peaks(cfg.models_dir)))
