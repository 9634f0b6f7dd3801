"""Audio manifests: existing recordings to evaluate, in the formats the field writes them. Each format is one
module here declaring `FORMAT` (pipeline/io/manifests/base.py), so a new format is a new file; `read` detects
the format of a file or folder, or takes the one named with --manifest-format."""
from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import ConfigError
from pipeline.io.manifests.base import Format, ManifestError, Recording, Reading, Unused, checked

__all__ = ["Recording", "ManifestError", "Manifest", "Unused", "formats", "detect", "read", "scan", "audio_dirs",
           "audio_present"]
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
    near = [f"{fmt.name}: {miss}" for fmt in formats().values() if (miss := fmt.near(path))]
    if near:
        raise ManifestError(f"--audio-manifest {path}: nearly in a format this tool reads, but not quite:\n  - " +
                            "\n  - ".join(near))
    raise ManifestError(f"--audio-manifest {path}: a folder in no format this tool reads; give a Kaldi data dir "
                        "(wav.scp, text), a Hugging Face audiofolder (metadata.csv or metadata.jsonl), an LJSpeech "
                        "folder (metadata.csv, wavs/), or a manifest file")


def audio_dirs(value: str) -> dict[str, Path]:
    """--audio-dir: DIR, or SYSTEM=DIR,SYSTEM=DIR for several systems' wavs of one test set. A folder given
    without a name names its system: `out/v1` is the system `v1`."""
    dirs: dict[str, Path] = {}
    parts = [p.strip() for p in value.split(",") if p.strip()]
    for part in parts:
        system, _, folder = part.rpartition("=") if "=" in part else ("", "", part)
        path = Path(folder.strip()).expanduser()
        if not path.is_dir():
            raise ConfigError(f"--audio-dir {part!r}: {path} is not a folder; give the folder holding <id>.wav")
        if not system.strip() and len(parts) > 1:
            raise ConfigError(f"--audio-dir {value!r}: give one folder, or name every folder's system (SYSTEM=DIR)")
        system = system.strip() or path.resolve().name
        if system in dirs:
            raise ConfigError(f"--audio-dir {value!r}: {system!r} named twice")
        dirs[system] = path
    return dirs


@dataclass(frozen=True)
class Manifest:
    path: Path
    recordings: list[Recording]
    unused: list[Unused]  # lines no recording comes from, files the manifest does not name
    audio_dirs: dict[str, Path]  # --audio-dir: system → folder


def scan(path: str | Path, format: str = AUTO, audio_dir: str = "") -> Manifest:
    """The recordings a manifest lists, checked, and what it holds that no recording uses. A missing audio file
    is not an error here: the recordings stage records it on that row, so that one missing wav never drops a
    system's row unseen (a system none of whose audio is there is a wrong folder: audio_present). Read once per
    run: the config's check, the stage's key and the stage all ask, and get the same reading while the files it
    read are unchanged."""
    path = Path(path).expanduser()
    if not path.exists():
        raise ManifestError(f"--audio-manifest {path}: no such file or folder")
    return _scanned(path.resolve(), format, audio_dir, _stamp(path, audio_dir), path)


def _stamp(path: Path, audio_dir: str) -> tuple:
    """What a reading depends on besides its arguments: the manifest's files and the audio folders' listings."""
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    folders = [Path(part.rpartition("=")[2].strip()).expanduser() for part in audio_dir.split(",") if part.strip()]
    return (tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files),
            tuple((str(d), d.stat().st_mtime_ns) for d in folders if d.is_dir()))


@functools.lru_cache(maxsize=8)
def _scanned(resolved: Path, format: str, audio_dir: str, stamp: tuple, path: Path) -> Manifest:
    fmt = formats()[format] if format != AUTO else detect(path)
    dirs = audio_dirs(audio_dir)
    if dirs and not (fmt.needs_audio_dir or fmt.takes_audio_dir):
        raise ConfigError(f"--audio-dir is for manifests that name no audio file (seed-tts meta.lst) or whose audio "
                          f"is the natural recordings (LJSpeech); a {fmt.name} manifest names each row's audio "
                          "itself. Drop --audio-dir")
    if fmt.needs_audio_dir and not dirs:
        raise ConfigError(f"--audio-manifest {path}: a {fmt.name} manifest names no audio file; add --audio-dir DIR "
                          "(the folder of <utt>.wav), or SYSTEM=DIR,SYSTEM=DIR for several systems")
    reading = Reading(path, dirs)
    return Manifest(path, checked(reading, fmt.read(reading)), reading.unused, dirs)


def audio_present(manifest: Manifest) -> None:
    """ManifestError when a system has none of its audio: a wrong folder, said before any model loads, not a run
    of error rows."""
    for system, members in _by_system(manifest.recordings).items():
        if not any(r.audio_path and Path(r.audio_path).is_file() for r in members):
            raise ManifestError(_none_there(manifest.path, system, members, manifest.audio_dirs.get(system)))


def read(path: str | Path, format: str = AUTO, audio_dir: str = "") -> list[Recording]:
    return scan(path, format, audio_dir).recordings


def _by_system(recordings: list[Recording]) -> dict[str, list[Recording]]:
    out: dict[str, list[Recording]] = {}
    for r in recordings:
        out.setdefault(r.system, []).append(r)
    return out


def _none_there(manifest: Path, system: str, members: list[Recording], folder: Path | None) -> str:
    expected = next((r.audio_path for r in members if r.audio_path), "")
    whose = f"system {system!r}" if system else "the manifest"
    if folder is None:
        return (f"--audio-manifest {manifest}: none of the {len(members)} audio files of {whose} is there (the first "
                f"it names: {expected or members[0].problem}); check the paths, which are read from the manifest's "
                "folder when relative")
    held = sorted(p.name for p in folder.iterdir() if p.suffix.lower() in (".wav", ".flac", ".ogg"))
    holds = (f"it holds {len(held)} other audio files, e.g. {', '.join(held[:3])}" if held
             else "it holds no .wav, .flac or .ogg file")
    return (f"--audio-dir {folder}: none of the {len(members)} wavs the manifest expects for {whose} is there (the "
            f"first: {expected}); {holds}. Give the folder of <utt>.wav, utt being the first field of each "
            f"line of {manifest.name}")
