"""Published recipes: what a run must hold for its numbers to stand beside a published table, and each way a run
departs from it.

A recipe is a preset (configs/<name>.toml) that sets `recipe = "<name>"`: every config value the file sets is one
the recipe requires, and its `[published]` table says what the numbers are then comparable with (`table`), what
always differs in this tool (`runtime`), and which of the paper's columns nothing here measures alike (`apart`). A
run records the verdict in summary.json, and says it on the terminal and at the top of its report.

A recipe that scores several languages differently holds each one's requirements in a `[languages.<code>]` table
(seed-tts-eval's test-zh: FunASR's paraformer-zh and characters): a run in that language (`asr.language`) is
given them over the base values (config/run.py load) and must hold them, and a run in a language the recipe does
not score departs from it."""
from __future__ import annotations

import tomllib
from typing import TYPE_CHECKING, Any

from pipeline.config.presets import PRESETS
from pipeline.scoring import language
from pipeline.scoring.config import Comparability

if TYPE_CHECKING:
    from pipeline.config.run import Config

PUBLISHED = "published"  # the preset's table that is not config
LANGUAGES = "languages"  # nor is this: each language's own requirements


def published(name: str, lang: str = "en") -> tuple[dict[str, Any], dict]:
    """A recipe's required values for text in `lang`, by dotted key, and its `[published]` table."""
    data = tomllib.loads((PRESETS / f"{name}.toml").read_text(encoding="utf-8"))
    about = data.pop(PUBLISHED, {})
    variant = data.pop(LANGUAGES, {}).get(language.base(lang), {})
    data.pop("recipe", None)
    about = {**about, **variant.pop(PUBLISHED, {})}
    return {**dict(_flat(data)), **dict(_flat(variant))}, about


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
            f"follows no published recipe: its {language.rate_name(cfg.asr.language, cfg.score.normalize)} "
            "compares with runs of this tool scored alike (compare-runs checks); "
            f"--preset {' or '.join(names())} scores as a published table was scored"))
    required, about = published(cfg.recipe, cfg.asr.language)
    departures = [f"{key} {_shown(_value(cfg, key))} instead of {_shown(want)}" for key, want in required.items()
                  if _shown(_value(cfg, key)) != _shown(want)]
    table = about.get("table", f"{cfg.recipe}'s table")
    rate = language.rate_name(cfg.asr.language, cfg.score.normalize)
    if departures:
        line = f"{cfg.recipe} recipe except {'; '.join(departures)}: {rate} not comparable with {table}"
    else:
        line = f"{cfg.recipe} recipe, every required value as published: {rate} comparable with {table}"
        if about.get("runtime"):
            line += f" ({about['runtime']})"
    apart = [f"not comparable: {a}" for a in about.get("apart", [])]
    return Comparability(recipe=cfg.recipe, departures=departures, line="; ".join([line, *apart]))


def scored_alone(name: str, lang: str) -> Comparability:
    """What `score --preset` can say: the text scored as the recipe scores it, while the engine that wrote the
    hypotheses, and its settings, are not known here."""
    required, about = published(name, lang)
    table = about.get("table", f"{name}'s table")
    rate = language.rate_name(lang, str(required.get("score.normalize", "")))
    if language.base(str(required.get("asr.language", lang))) != language.base(lang):
        return Comparability(recipe=name, departures=[f"language {lang}"], line=(
            f"{name} recipe scores {required.get('asr.language')}, not {lang}: {rate} not comparable with {table}"))
    asr = _shown(required.get("asr.engines", ""))
    return Comparability(recipe=name, departures=["the hypotheses' engine, which `score` cannot see"], line=(
        f"scored as the {name} recipe scores it; {rate} comparable with {table} only if the hypotheses came from "
        f"{asr or 'its ASR'}: this command cannot see which engine wrote them"))
