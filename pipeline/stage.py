"""What a stage is: a function from loaded input artifacts to output artifacts, and a declaration of what it
reads, what it makes and which config it depends on. The runner does the rest (runner.py); a stage never imports
another stage or the runner."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from pipeline.config import Config


@dataclass
class Result:
    summary: dict = field(default_factory=dict)  # counts and figures, kept in the manifest's stage_results
    model_files: dict[str, str] = field(default_factory=dict)  # {path: sha256} of the weights it read
    device: str | None = None  # where its model work ran, for stages that run a model


@dataclass(frozen=True)
class Stage:
    name: str
    doc: str
    reads: tuple[str, ...]  # artifacts it needs
    makes: tuple[str, ...]  # artifacts it writes
    config: tuple[str, ...]  # config sections or keys its outputs depend on
    run: Callable[[Config, dict[str, Any]], Result]
    optional: tuple[str, ...] = ()  # artifacts it uses when they exist (loaded as None otherwise)
