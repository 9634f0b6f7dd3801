"""Every stage, one module each, named after the stage it declares (`STAGE`). Adding a stage is adding a file:
the order the stages run in comes from what each reads and makes, not from a list."""
from __future__ import annotations

import importlib
import pkgutil

from pipeline.run.stage import Stage


def _declared() -> list[Stage]:
    found = []
    for module in pkgutil.iter_modules(__path__):
        stage = importlib.import_module(f"{__name__}.{module.name}").STAGE
        if stage.name != module.name:
            raise RuntimeError(f"pipeline/stages/{module.name}.py declares a stage named {stage.name!r}")
        found.append(stage)
    return found


def in_order(stages: list[Stage]) -> list[Stage]:
    """Each stage after every stage that makes what it reads (optional inputs too); ties by name."""
    makers = {a: {s.name for s in stages if a in s.makes} for s in stages for a in (*s.reads, *s.optional)}
    after = {s.name: set().union(*(makers[a] for a in (*s.reads, *s.optional))) - {s.name} for s in stages}
    ordered: list[Stage] = []
    while len(ordered) < len(stages):
        done = {s.name for s in ordered}
        ready = sorted((s for s in stages if s.name not in done and after[s.name] <= done), key=lambda s: s.name)
        if not ready:
            raise RuntimeError(f"stages read each other's artifacts in a cycle: {sorted(set(after) - done)}")
        ordered.append(ready[0])
    return ordered


ALL: list[Stage] = in_order(_declared())
STAGES = [s.name for s in ALL]
