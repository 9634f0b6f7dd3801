"""FunASR (`funasr:paraformer-zh`): the ASR of seed-tts-eval's test-zh, run by FunASR's own code as its run_wer.py
runs it (`AutoModel(model="paraformer-zh")`, `generate(input=..., batch_size_s=300)`), on each utterance alone.

The model is a FunASR model folder (config.yaml, model.pt, am.mvn, tokens.json), found, in order:
  1. a path: `funasr:/path/to/folder`;
  2. a drop-in folder `models/funasr/<name>/`;
  3. ModelScope's cache, where FunASR downloads it (MODELSCOPE_CACHE, else ~/.cache/modelscope/hub), under the
     repo FunASR names (paraformer-zh: iic/speech_seaco_paraformer_large_asr_nat-zh-cn-16k-common-vocab8404-pytorch);
  4. the Hugging Face cache (funasr/paraformer-zh).
Nothing is downloaded here (FunASR would fetch from ModelScope in the middle of a run): where it is found nowhere,
the run stops before any work with the command that fetches it. Each decode runs on one torch thread, one
utterance at a time, so that no transcript depends on a neighbour or a core count."""
from __future__ import annotations

import contextlib
import io
import logging
import os
import warnings
from pathlib import Path

import numpy as np

from pipeline.asr import base, sources
from pipeline.core.source import ModelMissing, Source, as_path
from pipeline.errors import ConfigError

MODELS = {"paraformer-zh": ("iic/speech_seaco_paraformer_large_asr_nat-zh-cn-16k-common-vocab8404-pytorch",
                            "funasr/paraformer-zh")}  # name → (ModelScope repo, Hugging Face repo), as FunASR maps them
NEEDED = ("config.yaml", "model.pt")
INSTALL = ("pip install --no-deps funasr==1.4.16 (scripts/setup installs it; its own needs, omegaconf, kaldiio and "
           "kaldi-native-fbank, are pinned in pyproject.toml)")


def modelscope_cache() -> Path:
    return Path(os.environ.get("MODELSCOPE_CACHE") or "~/.cache/modelscope/hub").expanduser()


def check_name(name: str) -> None:
    if as_path(name) is None and name not in MODELS:
        raise ConfigError(f"funasr:{name}: no such model; use funasr:{', funasr:'.join(MODELS)} or the path of a "
                          "FunASR model folder (config.yaml, model.pt)")


def model_folder(spec: str, path: Path, found: str, repo: str = "") -> Source:
    missing = [n for n in NEEDED if not (path / n).is_file()]
    if missing:
        raise ConfigError(f"asr.engines: {spec}: {path} is not a FunASR model folder (no {', '.join(missing)}); give "
                          "the folder FunASR downloads or exports, with config.yaml, model.pt, am.mvn and tokens")
    kept = (".yaml", ".pt", ".mvn", ".json", ".txt", ".model")  # what FunASR reads of the folder
    files = tuple(str(p) for p in sorted(path.iterdir()) if p.is_file() and p.suffix in kept)
    return Source(spec=spec, found=found, path=str(path), files=files, repo=repo)


def resolve(spec: str, options: base.ASRConfig, models_dir: str) -> Source:
    name = spec.partition(":")[2]
    path = as_path(name)
    if path is not None:
        return model_folder(spec, path, "path")
    if options.language != "zh":  # its CER and its normalizing follow the run's language
        raise ConfigError(f"asr.language = {options.language!r}: {spec} hears Mandarin Chinese; use --language zh")
    ms_repo, hf_repo = MODELS[name]
    drop_in = Path(models_dir) / "funasr" / name
    looked = [drop_in, modelscope_cache() / "models" / ms_repo, modelscope_cache() / ms_repo]
    for folder, found in zip(looked, ("models folder", "modelscope cache", "modelscope cache")):
        if folder.is_dir():
            return model_folder(spec, folder, found, ms_repo if found != "models folder" else "")
    snapshots = sources.hub_cache() / f"models--{hf_repo.replace('/', '--')}" / "snapshots"
    newest = max(snapshots.iterdir(), key=lambda p: p.stat().st_mtime) if snapshots.is_dir() and any(
        snapshots.iterdir()) else None
    if newest is not None:
        return model_folder(spec, newest, "hugging face cache", hf_repo)
    raise ModelMissing(spec, [f"{drop_in}/ (a FunASR model folder you put there)", f"ModelScope's cache "
                              f"{looked[1]}", f"the Hugging Face cache {snapshots.parent} ({hf_repo})"],
                       f"on a machine with a network, `python -c \"from funasr import AutoModel; "
                       f"AutoModel(model='{name}')\"` downloads it into ModelScope's cache; copy that folder to "
                       f"{drop_in}/ here, or name it: --asr funasr:/path/to/folder")


@contextlib.contextmanager
def quiet():
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        root.setLevel(level)


class FunASR:
    def __init__(self, source: Source, options: base.ASRConfig, models_dir: str, device: str = "cpu"):
        self.name = source.spec
        with quiet():  # FunASR prints its version, its audio backends and its hub settings as it loads
            try:
                from funasr import AutoModel
            except ImportError as e:
                raise ConfigError(f"{source.spec} needs FunASR ({e}): {INSTALL}") from None
            # ncpu: FunASR sets torch's thread count from it; one thread per decode, as every engine here decodes
            self.model = AutoModel(model=source.path, device=device, ncpu=1, disable_update=True, disable_pbar=True,
                                   disable_log=True, log_level="ERROR")

    def _decode(self, audio: np.ndarray) -> str:
        result = self.model.generate(input=np.ascontiguousarray(audio, dtype=np.float32), batch_size_s=300,
                                     disable_pbar=True)
        return result[0]["text"].strip() if result else ""

    def transcribe(self, arrays: list[np.ndarray]) -> list[base.Decoded]:
        # one model, one utterance at a time: FunASR's generate keeps its options on the model it runs
        return base.decode_each(arrays, [base.Decoder(short=self._decode, long=self._decode, reseed=lambda: None)])


base.ENGINES.register("funasr", FunASR, check=check_name, resolve=resolve)
