"""Coqui TTS voices (optional extra: `pip install -e .[coqui]`, done by `scripts/setup --test`).

    coqui:/path/to/model.pth          a checkpoint with config.json beside it
    coqui:/path/to/model_dir          a folder holding model.pth (or best_model.pth) and config.json
    coqui:tts_models/en/ljspeech/vits a Coqui model name: from your Coqui cache, else downloaded by Coqui's own
                                      model manager when the network allows

Coqui imports torchaudio (and, with torch ≥ 2.9, checks that torchcodec exists). PyPI's torchaudio is a CUDA
build that cannot load beside the pinned CPU torch 2.13, and no matching CPU build is published. VITS inference
uses neither package: torchaudio only reads reference wavs and resamples for external speaker encoders.
So, only when the real packages cannot be imported, this module registers small stand-ins before importing
Coqui: `torchaudio.load` reads with soundfile and `torchaudio.transforms.Resample` resamples with soxr;
`torchcodec` is an empty module. Models that truly need torchaudio's other features fail with a clear error."""
from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types
from pathlib import Path

import numpy as np

from pipeline.core.source import ModelDamaged, ModelMissing, Source, offline, reachable
from pipeline.tts import base

INSTALL = "pip install -e '.[coqui]' (scripts/setup --test installs it)"


def _standin(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    module.__doc__ = "Stand-in registered by pipeline.tts.coqui; see its docstring."
    sys.modules[name] = module
    return module


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
        return True
    except Exception:  # a broken binary raises OSError, not ImportError
        sys.modules.pop(name, None)
        return False


def install_standins() -> list[str]:
    """Register the stand-ins that are needed; returns their names."""
    import soundfile as sf
    import soxr
    import torch

    made = []
    if not _importable("torchaudio"):
        ta = _standin("torchaudio")

        def load(path, *args, **kwargs):
            data, sr = sf.read(str(path), dtype="float32", always_2d=True)
            return torch.from_numpy(data.T.copy()), sr

        class Resample(torch.nn.Module):
            def __init__(self, orig_freq: int = 16000, new_freq: int = 16000, **kwargs):
                super().__init__()
                self.orig, self.new = int(orig_freq), int(new_freq)

            def forward(self, wav: torch.Tensor) -> torch.Tensor:
                flat = wav.detach().cpu().numpy().reshape(-1, wav.shape[-1])
                out = np.stack([soxr.resample(row, self.orig, self.new) for row in flat])
                return torch.from_numpy(out.astype(np.float32)).reshape(*wav.shape[:-1], -1)

        ta.load = load
        ta.transforms = types.SimpleNamespace(Resample=Resample)
        made.append("torchaudio")
    if not _importable("torchcodec"):
        _standin("torchcodec")
        made.append("torchcodec")
    return made


def model_files(spec: str, path: Path) -> tuple[Path, Path]:
    """(model, config) of a checkpoint path or folder."""
    if path.is_dir():
        for name in ("model.pth", "best_model.pth", "model_file.pth", "checkpoint.pth"):
            if (path / name).exists() and (path / "config.json").exists():
                return path / name, path / "config.json"
        raise ModelDamaged(f"coqui:{spec}: the folder {path} needs model.pth (or best_model.pth) and config.json")
    if not path.exists():
        raise ModelDamaged(f"coqui:{spec}: no such model file {path}")
    config = path.parent / "config.json"
    if not config.exists():
        raise ModelDamaged(f"coqui:{spec}: {config} is missing beside the model file")
    return path, config


def cache_dir(name: str) -> Path:
    from trainer.io import get_user_data_dir

    return Path(get_user_data_dir("tts")) / name.replace("/", "--")


def download(name: str) -> None:
    """Coqui's own model manager, with its progress bar; only when one of its hosts answers."""
    if offline() or not (reachable("huggingface.co") or reachable("github.com")):
        return
    install_standins()
    from TTS.utils.manage import ModelManager

    try:
        ModelManager(progress_bar=True).download_model(name)
    except Exception as e:
        raise ModelMissing(f"coqui:{name}", [f"Coqui's model manager ({type(e).__name__}: {e})"],
                           "check the name with `.venv/bin/tts --list_models`") from None


def resolve(spec: str, options, models_dir: str) -> Source:
    name = spec.partition(":")[2]
    path = Path(name).expanduser()
    if path.suffix in (".pth", ".pt", ".tar") or path.exists():
        model, config = model_files(name, path)
        return Source(spec=spec, found="path", path=str(model), files=(str(model), str(config)))
    cached = cache_dir(name)
    if not cached.is_dir():
        download(name)
    if not cached.is_dir():
        raise ModelMissing(spec, [f"your Coqui cache {cached}", "Coqui's model manager (network not reachable)"],
                           f"on a machine with a network, run `.venv/bin/tts --model_name {name} --text hello "
                           f"--out_path /tmp/hello.wav` and copy {cached} to the same place here; or pass a "
                           "model path")
    files = tuple(str(p) for p in sorted(cached.iterdir()) if p.is_file())
    return Source(spec=spec, found="coqui cache", path=str(cached), files=files)


class CoquiVoice:
    def __init__(self, source: Source, options):
        try:
            install_standins()
            from TTS.api import TTS
        except ImportError as e:
            raise base.VoiceUnavailable(f"{source.spec} needs the coqui extra: {INSTALL} ({e})") from None
        self.name = source.spec
        if Path(source.path).is_dir():  # a model name, in the Coqui cache
            self.tts = TTS(model_name=source.name, progress_bar=False)
        else:
            self.tts = TTS(model_path=source.files[0], config_path=source.files[1], progress_bar=False)
        self.sample_rate = int(self.tts.synthesizer.output_sample_rate)

    def synthesize(self, text: str) -> tuple[np.ndarray, int]:
        import torch

        text = base.speakable(text)
        torch.manual_seed(0)  # VITS samples noise: a fixed seed keeps synthesis deterministic
        pieces = [np.asarray(self.tts.tts(part), dtype=np.float32) for part in base.chunks(text)]
        audio = base.join(pieces, self.sample_rate)
        peak = float(np.abs(audio).max()) if audio.size else 0.0
        return (audio / peak if peak > 1.0 else audio), self.sample_rate


base.VOICES.register("coqui", CoquiVoice, resolve=resolve)
