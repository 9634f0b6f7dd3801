"""Published recipes: what a run must hold for its numbers to stand beside a published table, and each way a run
departs from it.

A recipe is a preset (configs/<name>.toml) that sets `recipe = "<name>"`: every config value the file sets is one
the recipe requires, and its `[published]` table says what the numbers are then comparable with (`table`), what
always differs in this tool (`runtime`), and which of the paper's columns nothing here measures alike (`apart`). A
run records the verdict in summary.json, and says it on the terminal and at the top of its report."""
from __future__ import annotations

import tomllib
from typing import Any

from pipeline.config.run import PRESETS, Config
from pipeline.scoring.config import Comparability

PUBLISHED = "published"  # the preset's table that is not config


def published(name: str) -> tuple[dict[str, Any], dict]:
    """A recipe's required values, by dotted key, and its `[published]` table."""
    data = tomllib.loads((PRESETS / f"{name}.toml").read_text(encoding="utf-8"))
    about = data.pop(PUBLISHED, {})
    data.pop("recipe", None)
    return dict(_flat(data)), about


def names() -> list[str]:
    """Every preset that is a recipe."""
    return sorted(p.stem for p in PRESETS.glob("*.toml") if PUBLISHED in tomllib.loads(p.read_text("utf-8")))


def _flat(data: dict, prefix: str = ""):
    for key, value in data.items():
        if isinstance(value, dict):
            yield from _flat(value, f"{prefix}{key}.")
        else:
            yield prefix + key, value


def _value(cfg: Config, key: str) -> Any:
    value: Any = cfg
    for part in key.split("."):
        value = getattr(value, part)
    return value


def _shown(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value).lower() \
        if isinstance(value, bool) else str(value)


def of(cfg: Config) -> Comparability:
    if not cfg.recipe:
        return Comparability(recipe="", departures=[], line=(
            "follows no published recipe: its WER compares with runs of this tool scored alike (compare-runs "
            f"checks); --preset {' or '.join(names())} scores as a published table was scored"))
    required, about = published(cfg.recipe)
    departures = [f"{key} {_shown(_value(cfg, key))} instead of {_shown(want)}" for key, want in required.items()
                  if _shown(_value(cfg, key)) != _shown(want)]
    table = about.get("table", f"{cfg.recipe}'s table")
    if departures:
        line = f"{cfg.recipe} recipe except {'; '.join(departures)}: WER not comparable with {table}"
    else:
        line = f"{cfg.recipe} recipe, every required value as published: WER comparable with {table}"
        if about.get("runtime"):
            line += f" ({about['runtime']})"
    apart = [f"not comparable: {a}" for a in about.get("apart", [])]
    return Comparability(recipe=cfg.recipe, departures=departures, line="; ".join([line, *apart]))
