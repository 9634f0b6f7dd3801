"""Atomic writes and content hashes: a file that exists under its final name is complete."""
from __future__ import annotations

import contextlib
import csv
import functools
import hashlib
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Iterator


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it; put it straight back
    os.umask(mask)
    return mask


# mkstemp makes its file 0600; a file renamed into place gets the mode any new file of the user's would have
FILE_MODE = 0o666 & ~_umask()


@contextlib.contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary path beside `path`; rename it over `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.fchmod(fd, FILE_MODE)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_file(path: str | Path):
    """A text file written a piece at a time (UTF-8, newlines as written), that appears under its name, whole, when
    the block succeeds, as write_text's does."""
    with atomic_path(path) as tmp:
        try:
            with open(tmp, "w", encoding="utf-8", newline="", buffering=1 << 16) as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise OSError(e.errno, e.strerror, str(path)) from None


def write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:  # a full disk names no file by itself: name the one the user will look for
            raise OSError(e.errno, e.strerror, str(path)) from None


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str | Path, obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


def read_json(path: str | Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _record_hash(record: dict) -> str:
    body = {k: v for k, v in record.items() if k != "record_sha256"}
    return sha256_text(json.dumps(json.loads(json.dumps(body, default=str)), sort_keys=True))


def write_record(path: str | Path, record: dict) -> None:
    """A per-item cache file, sealed with the sha256 of its own content."""
    write_json(path, {**record, "record_sha256": _record_hash(record)})


def read_record(path: str | Path) -> dict:
    """A per-item cache file, or {} when it is missing, torn or edited since it was sealed."""
    record = read_json_or_empty(path)
    return record if record and record.get("record_sha256") == _record_hash(record) else {}


def read_json_or_empty(path: str | Path) -> dict:
    """A cache or state file, or {} when it is missing or damaged (torn, edited, not JSON): never trusted."""
    try:
        value = read_json(path)
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def write_csv(path: str | Path, rows: Iterable[dict], columns: list[str]) -> None:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(row)
    write_text(path, buf.getvalue())


def write_rows(path: str | Path, columns: list[str], rows: Iterable[tuple]) -> None:
    """A CSV of value tuples in column order (None is written empty, as csv.DictWriter writes it)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    write_text(path, buf.getvalue())


def read_csv(path: str | Path) -> list[dict]:
    with csv_rows(path) as rows:
        return list(rows)


@contextlib.contextmanager
def csv_rows(path: str | Path) -> Iterator[Iterator[dict]]:
    """read_csv's rows one at a time, for a reader that keeps something smaller of each: a table of 200,000 rows
    held as dicts while records were made of them took 1.8 times the memory of the records alone."""
    with open(path, newline="", encoding="utf-8") as f:
        yield csv.DictReader(f)


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def sha256_stat(path: str | Path) -> str:
    """sha256_file, hashed once per process for each (path, size, mtime) seen: a stage key and the per-item
    keys read the same audio files."""
    st = os.stat(path)
    return _sha256_at(str(path), st.st_size, st.st_mtime_ns)


def sha256_or_none(path: str | Path) -> str | None:
    """sha256_stat, or None for a file that is missing or unreadable."""
    try:
        return sha256_stat(path)
    except OSError:
        return None


@functools.lru_cache(maxsize=None)
def _sha256_at(path: str, size: int, mtime_ns: int) -> str:
    return sha256_file(path)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def key_of(obj: Any) -> str:
    """A short, stable hash of any JSON-able value (config fields, input hashes)."""
    return sha256_text(json.dumps(obj, sort_keys=True, default=str))[:16]


def file_hashes(models_dir: str | Path, files: list[str | Path]) -> dict[str, str]:
    """{path: sha256} of the files a run used, for its manifest.

    Hashes are cached in models/hashes.json by path, size and mtime: a 3 GB model is hashed once, not on every
    run."""
    cache_path = Path(models_dir) / "hashes.json"
    cache = read_json_or_empty(cache_path)  # damaged means hashed again, never trusted
    out, changed = {}, False
    for f in files:
        st = Path(f).stat()
        stamp = f"{st.st_size}:{st.st_mtime_ns}"
        entry = cache.get(str(f))
        if not isinstance(entry, dict) or entry.get("stamp") != stamp or not isinstance(entry.get("sha256"), str):
            entry = cache[str(f)] = {"stamp": stamp, "sha256": sha256_file(f)}
            changed = True
        out[str(f)] = entry["sha256"]
    if changed:
        write_json(cache_path, cache)
    return out


def converted_is_whole(out: Path, source_sha: str) -> bool:
    """Whether a file converted from a source (weights in another format) is there, was made from a source with
    this sha256, and still has the sha256 recorded beside it when it was written (`record_conversion`)."""
    record = out.with_suffix(".json")
    if not (out.exists() and record.exists()):
        return False
    saved = read_json_or_empty(record)
    return saved.get("source_sha256") == source_sha and saved.get("sha256") == sha256_file(out)


def record_conversion(out: Path, source: Path, source_sha: str) -> None:
    write_json(out.with_suffix(".json"), {"source": str(source), "source_sha256": source_sha,
                                          "sha256": sha256_file(out)})
