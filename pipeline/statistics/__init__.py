"""The statistics that answer users' questions, computed from the scores by the compare stage, and the files they
are written to. Every module of this package is one statistic, declared beside the code that computes it, with
its record type and its CSV (`STATISTICS.register(Statistic(...))`), so a new table is one file; an installed
plugin adds one through the entry point group `speech_eval.statistics`."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pipeline.core import tables
from pipeline.core.records import as_row
from pipeline.core.registry import Catalog
from pipeline.core.tables import Document, Table
from pipeline.scoring.utterances import Results


@dataclass(frozen=True)
class Inputs:
    """What every statistic is computed from."""
    scores: Results
    n_boot: int  # bootstrap resamples behind every interval
    seed: int
    family_of: Callable[[str], str]  # the model family an engine runs (asr.base.ENGINES.model_family)
    measured: list  # the measures' rows (measures.assessor.Measured)
    embeddings: dict  # their voice embeddings, by row id


@dataclass(frozen=True)
class Statistic:
    """A table of the compare stage: its name (what the report reads it as), its CSV in the run folder, the record
    type of its rows, and how it is computed."""
    name: str
    file: str
    record: type
    compute: Callable[[Inputs], list]


STATISTICS = Catalog("pipeline.statistics", "speech_eval.statistics", "statistic", skip=())


class Statistics(dict):
    """Every statistic of a run, by its registered name: `stats["comparisons"]` is the comparisons table's rows. A
    dict, since statistics are registered (a plugin's too), not fields known here."""

    def __init__(self, normalizer: str, bootstrap: int, **computed: list):
        super().__init__(computed)
        self.normalizer = normalizer  # the run's, under which the utterances were scored
        self.bootstrap = bootstrap  # resamples behind every interval

    def __missing__(self, name: str) -> list:
        raise KeyError(f"no statistic {name!r}; known: {', '.join(self)}")

    def __getattr__(self, name: str) -> list:
        """`stats.comparisons`, as a plugin's section wrote it before statistics were a dict: still the rows, with a
        note to write `stats["comparisons"]`."""
        if name.startswith("_") or name not in self:
            raise AttributeError(f"no statistic {name!r}; known: {', '.join(self)}")
        warnings.warn(f'stats.{name} is stats["{name}"] since the statistics became a dict', DeprecationWarning,
                      stacklevel=2)
        return self[name]


def compute(scores: Results, n_boot: int, seed: int, family_of: Callable[[str], str],
            measured: list | None = None, embeddings: dict | None = None) -> Statistics:
    given = Inputs(scores, n_boot, seed, family_of, measured or [], embeddings or {})
    return Statistics(scores.normalizer, n_boot, **{s.name: s.compute(given) for s in STATISTICS.all()})


def files() -> tuple[tables.File, ...]:
    """The statistics' files: the JSON first (it is always written, and an artifact is there when its first file is),
    then each statistic's table."""
    return (Document("comparisons.json", lambda s: {"normalizer": s.normalizer, "bootstrap": s.bootstrap,
                                                    "pairs": [as_row(c) for c in s["comparisons"]]},
                     read=lambda data: {"normalizer": data["normalizer"], "bootstrap": data["bootstrap"]}),
            *(Table(s.file, s.record, s.name) for s in STATISTICS.all()))


def write(stats: Statistics, out_dir: str | Path) -> list[Path]:
    return tables.write(files(), stats, out_dir, skip_empty=True)
