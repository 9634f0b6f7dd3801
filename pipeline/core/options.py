"""Config fields declared once, where they are used: `option()` records a field's help, its command-line flag,
its allowed values and whether it can change a result. Config loading, the CLI, validation and the stage keys
all read these declarations, so adding an option is one line in its owner's dataclass."""
from __future__ import annotations

import dataclasses
from dataclasses import field, fields
from typing import Any, Callable

from pipeline.errors import ConfigError


def option(default: Any, help: str | Callable[[], str], *, flag: str | None = None, choices: tuple = (),
           at_least: float | None = None, check: Callable[[Any], None] | None = None,
           speed_only: bool = False) -> Any:
    """A config field.

    flag: the command-line shortcut (`--voices`); every field is also reachable with --set.
    help: a string, or a function that makes it when help is shown (one that lists a registry's names).
    choices: the allowed values, checked on load (names from a registry go through `check`).
    at_least: the smallest allowed number. check: raises ConfigError for a bad value.
    speed_only: changes how fast, never what comes out, so it is left out of every cache key."""
    meta = {"help": help, "flag": flag, "choices": choices, "at_least": at_least, "check": check,
            "speed_only": speed_only}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=meta)
    return field(default=default, metadata=meta)


def help_of(f: dataclasses.Field) -> str:
    text = f.metadata["help"]
    return text() if callable(text) else text


def coerce(key: str, value: Any, default: Any) -> Any:
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise ConfigError(f"{key} = {value!r}: expected true or false")
    if isinstance(default, list):
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list):
            raise ConfigError(f"{key} = {value!r}: expected a list or a comma-separated string")
        return [str(v) for v in value]
    try:
        return type(default)(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key} = {value!r}: expected {type(default).__name__}") from None


def apply(obj: Any, values: dict[str, Any], prefix: str = "") -> Any:
    """A copy of a config section with fields set from a nested dict (TOML) or dotted keys ("train.max_iters"),
    names and types checked; sections are frozen, so a config is never changed in place."""
    names = {f.name: f for f in fields(obj)}
    changes: dict[str, Any] = {}
    for key, value in values.items():
        head, _, rest = key.partition(".")
        where = prefix + head
        if head not in names:
            raise ConfigError(f"unknown config key {where!r}; known: {', '.join(sorted(names))}")
        current = changes.get(head, getattr(obj, head))
        if dataclasses.is_dataclass(current):
            if rest:
                changes[head] = apply(current, {rest: value}, where + ".")
            elif isinstance(value, dict):
                changes[head] = apply(current, value, where + ".")
            else:
                raise ConfigError(f"{where} is a section; set {where}.<field>")
        else:
            changes[head] = coerce(where, value, current)
    return dataclasses.replace(obj, **changes) if changes else obj


def check(obj: Any, prefix: str = "") -> None:
    """Every field against its declaration: allowed values, lower bounds, its own check."""
    for f in fields(obj):
        value, key = getattr(obj, f.name), prefix + f.name
        if dataclasses.is_dataclass(value):
            check(value, key + ".")
            continue
        choices = f.metadata.get("choices", ())
        for v in (value if isinstance(value, list) else [value]):
            if choices and v not in choices:
                raise ConfigError(f"{key} = {v!r}; allowed: {', '.join(map(str, choices))}")
        low = f.metadata.get("at_least")
        if low is not None and value < low:
            raise ConfigError(f"{key} = {value} must be at least {low:g}")
        if f.metadata.get("check"):
            f.metadata["check"](value)


def identity(obj: Any) -> dict:
    """The fields of a section that can change a result: what a cache key holds."""
    out = {}
    for f in fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            out[f.name] = identity(value)
        elif not f.metadata.get("speed_only"):
            out[f.name] = value
    return out


def declared(obj: Any, prefix: str = "") -> list[tuple[str, dataclasses.Field, Any]]:
    """(dotted key, field, default) of every leaf field, in declaration order."""
    out = []
    for f in fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            out += declared(value, f"{prefix}{f.name}.")
        else:
            out.append((prefix + f.name, f, value))
    return out


LM_SECTIONS = ("model", "data", "train", "sample")  # keys only the LM's training and sampling read


def add_flags(parser: Any, obj: Any, every_field: bool = False, keys: bool = True) -> list[str]:
    """Command-line flags for the fields that declare one (with every_field: for every leaf field, named after
    it); types, choices, help and defaults come from the declarations, the speech options before the LM's.
    Choices are matched without regard to case. `keys`: name each flag's config key in its help. Returns the
    flags' dests: their dotted config keys."""
    dests = []
    leaves = declared(obj)
    for key, f, default in sorted(leaves, key=lambda leaf: leaf[0].partition(".")[0] in LM_SECTIONS):
        flag = f.metadata.get("flag") or (f"--{key.replace('_', '-')}" if every_field else None)
        if not flag:
            continue
        choices = list(f.metadata.get("choices") or ())
        shown = ",".join(default) if isinstance(default, list) else repr(default)
        where = f"default {shown}" + (f"; key {key}" if keys else "")
        kind = type(default) if not isinstance(default, (list, bool, str)) else str
        parser.add_argument(flag, dest=key, default=None, metavar=f.name.upper(),
                            type=(lambda text: text.lower()) if choices else kind, choices=choices or None,
                            help=(help_of(f) + (f"; one of {', '.join(choices)}" if choices else "")
                                  + f" ({where})").replace("%", "%%"))
        dests.append(key)
    return dests


def given(args: Any, dests: list[str]) -> dict[str, Any]:
    """The config keys set on this command line."""
    return {k: getattr(args, k) for k in dests if getattr(args, k) is not None}
