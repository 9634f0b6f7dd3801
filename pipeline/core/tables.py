"""The files of an artifact, each declared once: its name, what it holds, and how it is written and read back.

A `Table` is a CSV of typed records (pipeline/core/records.py) taken from one attribute of a results object (one
key of a results dict); a
`Document` is any other file (JSON, trn, text) rendered from the whole results object. The module that computes
the results declares its files (scoring/files.py FILES, statistics/__init__.py files()); the artifact table
(artifacts.py), the writing stage, `run_pipeline.py score` and the report all read that one declaration."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pipeline.core import records, store


@dataclass(frozen=True)
class Table:
    name: str  # file name
    record: type  # the record type of each row
    field: str  # the attribute of the results object that holds the rows; the key it is loaded under


@dataclass(frozen=True)
class Document:
    name: str
    render: Callable[[Any], str | dict]  # text, or data written as JSON
    read: Callable[[Any], dict] | None = None  # the results object's fields it gives back, from its text or data


File = Table | Document


def write(files: tuple[File, ...], results: Any, out_dir: str | Path, skip_empty: bool = False) -> list[Path]:
    """Every file; with skip_empty, a table without rows (a statistic this run's shape has nothing for: engine
    agreement with one engine) is not written, and one left from an earlier run goes."""
    out = Path(out_dir)
    written = []
    for f in files:
        if isinstance(f, Table):
            rows = results[f.field] if isinstance(results, dict) else getattr(results, f.field)
            if skip_empty and not rows:
                (out / f.name).unlink(missing_ok=True)
                continue
            records.write_csv(out / f.name, f.record, rows)
        else:
            content = f.render(results)
            if isinstance(content, str):
                store.write_text(out / f.name, content)
            else:
                store.write_json(out / f.name, content)
        written.append(out / f.name)
    return written


def load(files: tuple[File, ...], out_dir: str | Path, into: type) -> Any:
    """The results object the files were written from, typed: each table's rows (none for a table not written,
    which had none) and what each readable document gives back."""
    out, fields = Path(out_dir), {}
    for f in files:
        path = out / f.name
        if isinstance(f, Table):
            fields[f.field] = records.read_csv(path, f.record) if path.exists() else []
        elif f.read is not None:
            fields.update(f.read(store.read_json(path) if path.suffix == ".json" else path.read_text()))
    return into(**fields)


def names(files: tuple[File, ...]) -> list[str]:
    return [f.name for f in files]
