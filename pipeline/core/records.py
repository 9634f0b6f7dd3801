"""What every record of every layer shares: a row's identity, the declarations of its columns, and the one CSV
reader and writer for all of them. Each record type lives beside the module that makes it (Sentence in
lm/sentences.py, Speech in io/speech.py, Transcript in asr/transcriber.py, Measured in measures/assessor.py, the
scores in scoring/utterances.py, each statistic's row beside its computation).

A field's name is its CSV column and the order of fields is the order of columns (new ones go at the end);
a column's meaning is the comment beside its field. Empty cells are None."""
from __future__ import annotations

import csv
import dataclasses
import functools
import io
import itertools
import operator
import typing
from enum import StrEnum
from pathlib import Path
from typing import Callable, Iterable, TypeVar

from pipeline.core import store

R = TypeVar("R")
Group = tuple[str, str, str]  # (voice, asr, condition): what a corpus figure is computed over


class Status(StrEnum):
    """What became of a row, one name in every layer (and its CSV cell: the value)."""
    OK = "ok"
    SKIPPED = "skipped"  # nothing a voice could say
    ERROR = "error"  # the reason is in the row's `error`
    EMPTY_REFERENCE = "empty_reference"  # aligned, but the reference is empty after normalization: no WER of its
    # own; what was written counts as insertions in the corpus figures


SPOKEN = (Status.OK, Status.SKIPPED, Status.ERROR)  # what a speech row, a transcript or a measured row can be
ALIGNED = (Status.OK, Status.EMPTY_REFERENCE)  # the scored rows that reached the aligner


def trn_safe(text: str) -> str:
    """A part of an id: a space would end a trn id, and an underscore inside a part would hide where the system
    ends and the sentence begins. (sclite's `-i spu_id` takes the speaker as the id up to its first hyphen, else
    its first underscore.)"""
    return text.replace("_", "-").replace(" ", "-")


def utterance_id(*, sentence_id: str, voice: str = "", condition: str = "", asr: str = "") -> str:
    """A row's one name, built one way from what the row is (its sentence, and its voice, condition and engine where
    it has them), as lhotse names a cut: the same in every CSV, trn and pralign file, the report's anchors and
    every join. An utterance is <voice>-<condition>-<asr>_<sentence_id>
    (`piper-joe-clean-faster-whisper-base_s0-1`), a speech row, which no engine has heard yet,
    <voice>-<condition>_<sentence_id>. Without a system (a transcript scored by `run_pipeline.py score`) it is the
    id the user gave, spaces aside, so that it joins with the user's own files. Manifests refuse ids that would
    share a name (io/manifests/base.py)."""
    system = "-".join(p for p in (voice, condition, asr) if p).replace(":", "-").replace("=", "")
    if not system:
        return sentence_id.replace(" ", "-")
    return f"{trn_safe(system)}_{trn_safe(sentence_id)}"


class SpeechRow:
    """What a record of one speech row (one sentence in one voice and condition) shares: its speech id."""
    __slots__ = ()

    @property
    def speech_id(self) -> str:
        return utterance_id(sentence_id=self.sentence_id, voice=self.voice, condition=self.condition)


def columns_of(kind: type = float):
    """A field that is a dict of columns of one kind, written where the field is declared, one column per key (a
    measure's columns: which exist depends on the measures a run selected; a WER per normalizer; a count per health
    flag), so that a new key is a new column without a new field."""
    return dataclasses.field(default_factory=dict, metadata={"columns": kind})


def lm_only(default=None):
    """A field only a trained LM fills: a table in which every row holds its default (a run of recordings or
    sentences without an LM) leaves the column out, and reading it back gives the default."""
    return dataclasses.field(default=default, metadata={"lm_only": True})


class Codec(typing.NamedTuple):
    """How a field that holds several values is one CSV cell."""
    read: Callable[[str], object]  # one item from its text
    write: Callable[[object], str]  # one item's text
    sep: str
    kind: type  # list or tuple


def joined(kind: Callable[[str], object] = str, form: str = "{}", lm: bool = False, sep: str = ";"):
    """A list, held as a list until the CSV writer joins it into one `sep`-separated cell (each item written as
    `form` gives it) and read back item by item with `kind`; `lm`: only a trained LM fills it (lm_only)."""
    return dataclasses.field(default_factory=list, metadata={"joined": Codec(kind, form.format, sep, list),
                                                             "lm_only": lm})


GROUP = Codec(lambda text: "" if text == "-" else text, lambda name: name or "-", " | ", tuple)


def grouped():
    """A group's names (a Group: voice, engine, condition; or some of them), a tuple until the CSV writer writes it
    `piper:joe | faster-whisper:base | clean`, an empty name as `-`."""
    return dataclasses.field(metadata={"joined": GROUP})


def label(group: tuple[str, ...]) -> str:
    """A group as its cell, its JSON and the report name it."""
    return _cell(group, GROUP)


class Grouped:
    """A record of one (voice, asr, condition) group, or of one of its utterances."""
    __slots__ = ()

    @property
    def group(self) -> Group:
        return self.voice, self.asr, self.condition


def one_of(value: str, allowed: tuple[str, ...], what: str) -> None:
    if value not in allowed:
        raise ValueError(f"{what} = {value!r}; expected one of {', '.join(allowed)}")


@functools.cache
def _columns(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if not f.metadata.get("columns"))


@functools.cache
def _spread(cls: type) -> str | None:
    """The field of `cls` whose dict is written as columns of their own (columns_of), if any."""
    return next((f.name for f in dataclasses.fields(cls) if f.metadata.get("columns")), None)


@functools.cache
def _defaults(cls: type) -> frozenset[str]:
    """Fields a table may lack, and a record then holds its default (a table of recordings has no LM column)."""
    return frozenset(f.name for f in dataclasses.fields(cls)
                     if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING)


def columns(cls: type) -> list[str]:
    """The fixed columns; a columns_of field adds its keys after them."""
    return list(_columns(cls))


@functools.cache
def _lm_only(cls: type) -> dict[str, object]:
    return {f.name: f.default_factory() if f.default is dataclasses.MISSING else f.default
            for f in dataclasses.fields(cls) if f.metadata.get("lm_only")}


@functools.cache
def _joined(cls: type) -> dict[str, Codec]:
    return {f.name: f.metadata["joined"] for f in dataclasses.fields(cls) if f.metadata.get("joined")}


def _cell(value, codec: Codec | None):
    return codec.sep.join(codec.write(x) for x in value) if codec else value


def as_row(record) -> dict:
    """A record as its JSON twin holds it: a columns_of field's keys in its place, a group as its label, a list as
    a list."""
    spread, codecs = _spread(type(record)), _joined(type(record))
    out = {}
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        if f.name == spread:
            out.update(value)
        elif f.name in codecs and codecs[f.name].kind is tuple:
            out[f.name] = _cell(value, codecs[f.name])
        else:
            out[f.name] = value
    return out


def write_csv(path: str | Path, cls: type, rows: Iterable) -> None:
    names, spread, optional = columns(cls), _spread(cls), _lm_only(cls)
    if optional:
        rows = list(rows)
        unused = {n for n, default in optional.items() if rows and all(getattr(r, n) == default for r in rows)}
        names = [n for n in names if n not in unused]
    lists = _joined(cls)
    if spread is None:
        store.write_rows(path, names, map(_cells(names, lists), rows))
        return
    rows = list(rows)
    extra = list(dict.fromkeys(k for r in rows for k in getattr(r, spread)))
    at = sum(1 for f in dataclasses.fields(cls)[:[f.name for f in dataclasses.fields(cls)].index(spread)]
             if f.name in names)
    before, after, spread_values = _cells(names[:at], lists), _cells(names[at:], lists), operator.attrgetter(spread)
    store.write_rows(path, names[:at] + extra + names[at:],
                     ([*before(r), *map(spread_values(r).get, extra), *after(r)] for r in rows))


class RowWriter:
    """A CSV of records written a row at a time, byte for byte as write_csv writes them all at once, where the
    columns are known before the rows: every column of the record type but the LM's (lm=False) and the spread ones
    (none: a row with a value there, or an LM value without its column, is refused). Without a row it is
    write_csv's header alone. Used as a context: the file appears whole, under its name, when the block succeeds."""

    def __init__(self, path: str | Path, cls: type, lm: bool = True) -> None:
        self.path, self.cls, self.rows = path, cls, 0
        optional, spread = _lm_only(cls), _spread(cls)
        self.names = [n for n in columns(cls) if lm or n not in optional]
        self.cells = _cells(self.names, _joined(cls))
        unwritten = [n for n in (*optional, spread) if n is not None and n not in self.names]
        self.unwritten = operator.attrgetter(*unwritten) if unwritten else None
        defaults = tuple({} if n == spread else optional[n] for n in unwritten)
        self.defaults = defaults[0] if len(defaults) == 1 else defaults

    def __enter__(self) -> RowWriter:
        self._file = store.atomic_file(self.path)
        self._file_handle = self._file.__enter__()
        self._writer = csv.writer(self._file_handle, lineterminator="\n")
        return self

    def __exit__(self, *exc) -> bool | None:
        if exc[0] is None and not self.rows:
            self._writer.writerow(columns(self.cls))
        return self._file.__exit__(*exc)

    def write(self, row) -> None:
        self._check(row)
        if not self.rows:
            self._writer.writerow(self.names)
        self.rows += 1
        self._writer.writerow(self.cells(row))

    def render(self, rows: Iterable) -> str:
        """The lines write() would write for these rows, header apart: for a process that scores rows and leaves
        writing them to the one that holds the file (write_rendered)."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        for row in rows:
            self._check(row)
            writer.writerow(self.cells(row))
        return buffer.getvalue()

    def write_rendered(self, text: str, rows: int) -> None:
        """Lines that render() made of `rows` rows, written as write() would have written the rows."""
        if rows and not self.rows:
            self._writer.writerow(self.names)
        self.rows += rows
        self._file_handle.write(text)

    def _check(self, row) -> None:
        if self.unwritten is not None and self.unwritten(row) != self.defaults:
            raise ValueError(f"{self.path}: a {self.cls.__name__} row with a value in a column this table does not "
                             "write; write it with write_csv")


def _cells(names: list[str], lists: dict[str, Codec]):
    """A record's cells of these columns: one attribute fetch for all of them (a table of 100,000 rows and 40
    columns is written in a few seconds), then the lists joined."""
    if not names:
        return lambda r: ()
    values = operator.attrgetter(*names)
    if len(names) == 1:
        codec = lists.get(names[0])
        return lambda r: (_cell(values(r), codec),)
    joins = [(k, lists[n]) for k, n in enumerate(names) if n in lists]
    if not joins:
        return values

    def cells(r) -> list:
        out = list(values(r))
        for k, codec in joins:
            out[k] = _cell(out[k], codec)
        return out
    return cells


def read_csv(path: str | Path, cls: type[R]) -> list[R]:
    hints, names, spread = typing.get_type_hints(cls), columns(cls), _spread(cls)
    with store.csv_rows(path) as rows:
        first = next(rows, None)
        if first is None:
            return []
        missing = set(names) - set(first) - _defaults(cls)
        if missing:
            raise ValueError(f"{path}: not a {cls.__name__} table (no column {', '.join(sorted(missing))})")
        present = [n for n in names if n in first]
        extra = [k for k in first if k not in names] if spread else []
        kind = next(f.metadata["columns"] for f in dataclasses.fields(cls) if f.name == spread) if spread else None
        lists = _joined(cls)
        parsers = [(n, functools.partial(_split, codec=lists[n]) if n in lists else _parser(hints[n]))
                   for n in present]
        out = []
        for row in itertools.chain((first,), rows):
            fields = {n: row[n] if parse is None else parse(row[n]) for n, parse in parsers}
            if spread:
                fields[spread] = {k: None if row[k] == "" else kind(row[k]) for k in extra}
            out.append(cls(**fields))
        return out


def _split(text: str, codec: Codec):
    return codec.kind(codec.read(x) for x in text.split(codec.sep)) if text else codec.kind()


def _parser(hint) -> Callable[[str], object] | None:
    """How a cell of a column of this type is read: an empty cell is None where the type allows it, a number is read
    as the int or float the type names (int first), anything else is its text (None: the text as it is). Made once
    per column: asking the type per cell was over a third of reading a 200,000-row table back."""
    kinds = typing.get_args(hint) or (hint,)
    number = int if int in kinds else float if float in kinds else None
    if type(None) not in kinds:
        return number
    if number is None:
        return lambda text: None if text == "" else text
    return lambda text: None if text == "" else number(text)
