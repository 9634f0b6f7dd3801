"""Presets: TOML files of config values in configs/, read by name. Apart from run.py, which composes the whole
config from every owner's section: `score`, which reads a recipe's score section alone, imports no engine."""
from __future__ import annotations

import tomllib
from pathlib import Path

from pipeline.errors import ConfigError

PRESETS = Path(__file__).resolve().parents[2] / "configs"


def read_toml(path: Path, what: str) -> dict:
    from pipeline.io import inputs

    try:
        return tomllib.loads(inputs.read_text(path, what))
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{what} {path}: {e}") from None


def names() -> list[str]:
    return sorted(path.stem for path in PRESETS.glob("*.toml"))


def preset(name: str) -> dict:
    """A preset's config values; a recipe's `[published]` table says what they make comparable
    (config/recipes.py), and is not config."""
    path = PRESETS / f"{name}.toml"
    if not path.is_file():
        raise ConfigError(f"--preset {name!r}: no such preset; available: {', '.join(names())}")
    values = read_toml(path, "--preset")
    values.pop("published", None)
    values.pop("languages", None)  # a recipe's requirements per language (config/recipes.py), not config
    return values


def in_language(name: str, lang: str) -> dict:
    """A recipe's values for runs in one language (its `[languages.<code>]` table, config/recipes.py), {} if none."""
    from pipeline.scoring.language import base

    variant = dict(read_toml(PRESETS / f"{name}.toml", "--preset").get("languages", {}).get(base(lang), {}))
    variant.pop("published", None)
    return variant
