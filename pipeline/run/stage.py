"""What a stage is: a function from loaded input artifacts to output artifacts, and a declaration of what it
reads, what it makes, which config it depends on and which models it runs. The runner does the rest (runner.py);
a stage never imports another stage or the runner."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from pipeline.config.run import Config
from pipeline.core.manifest import Computation
from pipeline.core.source import Source


@dataclass
class Outcome:
    summary: dict = field(default_factory=dict)  # counts and figures, kept in the manifest's stage_results
    model_files: dict[str, str] = field(default_factory=dict)  # {path: sha256} of the weights it read
    device: str | None = None  # where its model work ran, for stages that run a model
    # items that failed in this stage's own work: until they go through, the stage is not up to date, and the
    # next run tries them again (and only them: the others come from the per-item cache)
    failed: int = 0
    # rows of the run's results that failed (status error), whatever stage failed them: while a stage's last result
    # has any, the run exits 1
    failed_rows: int = 0


@dataclass(frozen=True)
class Stage:
    name: str
    doc: str
    reads: tuple[str, ...]  # artifacts it needs
    makes: tuple[str, ...]  # artifacts it writes
    config: tuple[str, ...]  # config sections or keys its outputs depend on
    # called with the loaded input artifacts by name, and "plan": the inputs and config of every stage of the run
    run: Callable[[Config, dict[str, Any]], Outcome]
    optional: tuple[str, ...] = ()  # artifacts it uses when they exist (loaded as None otherwise)
    # the models it runs, resolved before any stage runs: their files' hashes join its key, the manifest records
    # where each was found, and the stage receives them as loaded["models"], {spec: Source}
    models: Callable[[Config], dict[str, Source]] | None = None
    # a source (a stage that reads an input no stage makes) runs when this says so; the others run when all they
    # read is made by the stages before them
    runs_when: Callable[[Config], bool] | None = None
    # what changes its outputs besides its inputs, config and models (CTranslate2's kernel settings read from the
    # environment, a backend's arithmetic revision): it joins its key
    environment: Callable[[Config], dict] | None = None
    # what the stage tells the user at the end of every run that selects it, whether it ran or was up to date (the
    # report's summary table and path)
    epilogue: Callable[[Config], str] | None = None
    # what the run's manifest records of the computation behind the stage's outputs, for a reader of the run (the
    # decoding every engine does, the scoring revision compare-runs checks)
    computation: Callable[[Config], Computation] | None = None
