"""Audio manifests: existing recordings to evaluate, in the formats the field writes them. Each format is one
module here declaring `FORMAT` (pipeline/io/manifests/base.py), so a new format is a new file; `read` detects
the format of a file or folder, or takes the one named with --manifest-format."""
from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from pipeline.errors import ConfigError
from pipeline.io.manifests.base import Format, ManifestError, Recording, Source, checked

__all__ = ["Recording", "ManifestError", "formats", "detect", "read", "audio_dirs"]
AUTO = "auto"


def formats() -> dict[str, Format]:
    """Every format, the most specific first: the order detection tries them in."""
    found = [importlib.import_module(f"{__name__}.{m.name}").FORMAT
             for m in pkgutil.iter_modules(__path__) if m.name != "base"]
    return {f.name: f for f in sorted(found, key=lambda f: (-f.rank, f.name))}


def check_format(name: str) -> None:
    if name != AUTO and name not in formats():
        raise ConfigError(f"manifest_format = {name!r}: unknown; use auto or one of {', '.join(formats())}")


def detect(path: Path) -> Format:
    for fmt in formats().values():
        if fmt.detect(path):
            return fmt
    raise ManifestError(f"--audio-manifest {path}: a folder in no format this tool reads; give a Kaldi data dir "
                        "(wav.scp, text), a Hugging Face audiofolder (metadata.csv or metadata.jsonl), an LJSpeech "
                        "folder (metadata.csv, wavs/), or a manifest file")


def audio_dirs(value: str) -> dict[str, Path]:
    """--audio-dir: DIR, or SYSTEM=DIR,SYSTEM=DIR for several systems' wavs of one test set."""
    dirs: dict[str, Path] = {}
    for part in (p.strip() for p in value.split(",") if p.strip()):
        system, sep, folder = part.rpartition("=") if "=" in part else ("", "", part)
        if system in dirs:
            raise ConfigError(f"--audio-dir {value!r}: {system or 'the folder'!r} named twice")
        path = Path(folder.strip()).expanduser()
        if not path.is_dir():
            raise ConfigError(f"--audio-dir {part!r}: {path} is not a folder; give the folder holding <id>.wav")
        dirs[system.strip()] = path
    if "" in dirs and len(dirs) > 1:
        raise ConfigError(f"--audio-dir {value!r}: give one folder, or name every folder's system (SYSTEM=DIR)")
    return dirs


def read(path: str | Path, format: str = AUTO, audio_dir: str = "") -> list[Recording]:
    """The recordings a manifest lists, checked. Missing audio is not an error here: the recordings stage
    records it on that row, so that one missing wav never drops a system's row unseen."""
    path = Path(path).expanduser()
    if not path.exists():
        raise ManifestError(f"--audio-manifest {path}: no such file or folder")
    fmt = formats()[format] if format != AUTO else detect(path)
    dirs = audio_dirs(audio_dir)
    if dirs and not fmt.needs_audio_dir:
        raise ConfigError(f"--audio-dir is for manifests that name no audio file (seed-tts meta.lst); a {fmt.name} "
                          f"manifest names each row's audio itself. Drop --audio-dir")
    if fmt.needs_audio_dir and not dirs:
        raise ConfigError(f"--audio-manifest {path}: a {fmt.name} manifest names no audio file; add --audio-dir DIR "
                          "(the folder of <utt>.wav), or SYSTEM=DIR,SYSTEM=DIR for several systems")
    source = Source(path, dirs)
    return checked(source, fmt.read(source))
