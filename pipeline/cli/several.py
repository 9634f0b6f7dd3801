"""A command in several languages: `--language zh,de`, or `--sentences zh=zh.txt,de=de.txt`. A run is in one
language (its unit, its normalizer, its ASR's language, its caches' keys and every comparison hold one), so the
command is a run per language, named <run>-<language>, each with its own files and report; then one table of their
rates by language, each in its own unit (cli/languages.py), in <results_dir>/<run>-languages/.

Each language's run gets its sentences (`zh=zh.txt`), the voices given for it (`--voices zh=espeak:cmn,de=espeak:de`;
a voice given without a language speaks in every run), and, from a manifest whose rows name their language, its
own rows (config `languages`, which every run of the command records)."""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pipeline.config.run import language_run, table_folder
from pipeline.core import records
from pipeline.errors import ConfigError, InputError
from pipeline.exec.progress import say
from pipeline.scoring.language import base

LANGUAGE = re.compile(r"[A-Za-z]{2,3}([-_][A-Za-z0-9]+)?")


@dataclass(frozen=True)
class Part:
    """One language's run of the command: the flags that make it."""
    language: str
    overrides: dict


def _items(value) -> list[str]:
    return [v.strip() for v in (value.split(",") if isinstance(value, str) else value) if v.strip()]


def _keyed(item: str) -> tuple[str, str] | None:
    """`zh=espeak:cmn` as (zh, espeak:cmn); None for an item without a language."""
    key, sep, rest = item.partition("=")
    return (base(key), rest.strip()) if sep and LANGUAGE.fullmatch(key.strip()) else None


def parts(overrides: dict) -> list[Part]:
    """The command's runs, one per language, in the order given; [] for a command in one language."""
    given = str(overrides.get("asr.language", ""))
    languages = [base(x) for x in _items(given)] if "," in given else []
    sentences = overrides.get("sentences", "")
    files = dict(filter(None, map(_keyed, _items(sentences)))) if sentences else {}
    if sentences and files and len(files) != len(_items(sentences)):
        raise ConfigError(f"--sentences {sentences!r}: give one file, or each language's: zh=zh.txt,de=de.txt")
    if not languages and not files:
        return []
    if len(set(languages)) != len(languages):
        raise ConfigError(f"--language {given!r}: a language named twice; name each once")
    if files and languages and set(files) != set(languages):
        raise ConfigError(f"--sentences {sentences!r} names {','.join(files)} and --language {given!r} "
                          f"{','.join(languages)}; give each language of --language its sentences, or drop --language")
    languages = languages or list(files)
    if sentences and not files:
        raise ConfigError(f"--sentences {sentences!r}: a command in several languages speaks each language's own "
                          f"sentences; give them as {','.join(f'{x}={x}.txt' for x in languages)}")
    voices = _voices(overrides.get("tts.voices"), languages)
    return [Part(lang, {**overrides, "asr.language": lang, "languages": languages,
                        **({"sentences": files[lang]} if files else {}),
                        **({"tts.voices": voices[lang]} if voices else {})}) for lang in languages]


def _voices(value, languages: list[str]) -> dict[str, list[str]]:
    """Each language's voices from `--voices zh=espeak:cmn,de=espeak:de,piper:joe`; {} where none names a
    language (the same voices in every run)."""
    if not value:
        return {}
    items = _items(value)
    keyed = [k for k in map(_keyed, items) if k]
    if not keyed:
        return {}
    out: dict[str, list[str]] = {lang: [] for lang in languages}
    for item in items:
        lang, voice = _keyed(item) or ("", item)
        if lang and lang not in out:
            raise ConfigError(f"--voices {item!r}: {lang} is not a language of this command "
                              f"({','.join(languages)}); name the voice's language among them")
        for each in [lang] if lang else languages:
            out[each].append(voice)
    silent = [lang for lang, voices in out.items() if not voices]
    if silent:
        raise ConfigError(f"--voices: no voice speaks {','.join(silent)}; give one as {silent[0]}=VOICE, or a voice "
                          "without a language, which speaks in every run")
    return out


def run(parts_: list[Part], load: Callable[[dict], object], run_one: Callable[[object], int],
        tabulate: bool = True) -> int:
    """Each language's run, then the table of their rates (`tabulate`: not for --plan or --print-config). Every
    language's config is checked before any run starts, as one run's is; a run that fails leaves the others to run,
    and the exit code is the first failing run's, in the order given, so each code keeps its one meaning."""
    configs, errors, name = {}, {}, ""
    for part in parts_:
        try:
            name = load(part.overrides).run
            configs[part.language] = load({**part.overrides, "run": language_run(name, part.language)})
        except ConfigError as e:
            kind = "input" if isinstance(e, InputError) else "config"
            errors.setdefault((kind, str(e)), []).append(part.language)
    if errors:
        for (kind, message), langs in errors.items():
            whose = "" if len(langs) == len(parts_) else f"--language {','.join(langs)}: "
            print(f"{kind} error: {whose}{message}", file=sys.stderr)
        return 2
    codes = {}
    for lang, cfg in configs.items():
        say(f"── --language {lang}: {cfg.run} ──")
        codes[lang] = run_one(cfg)
    if tabulate:
        say("runs: " + ", ".join(f"{lang} {'done' if code == 0 else f'exit {code}'}" for lang, code in codes.items()))
        stopped = [lang for lang, code in codes.items() if code not in (0, 1)]  # 1: finished, with failed rows
        for lang in stopped:
            say(f"--language {lang}: not in the table: its run stopped (exit {codes[lang]}) before it finished")
        if not _table([(lang, cfg) for lang, cfg in configs.items() if lang not in stopped], name):
            codes["table"] = 4
    return next((code for code in codes.values() if code), 0)


def _table(runs: list, name: str) -> bool:
    """The finished runs' rates by language, printed and in <results_dir>/<run>-languages/languages.csv; False
    when the table cannot be written (the runs are kept whole, and `languages` makes it again)."""
    from pipeline.cli import languages

    rows = []
    for lang, cfg in runs:
        try:
            rows += languages.rates([str(Path(cfg.results_dir) / cfg.run)], cfg.results_dir)
        except InputError as e:
            say(f"--language {lang}: not in the table: {e}")
    if not rows:
        return True
    rows.sort(key=languages.order)
    print(languages.table(rows))
    out = Path(runs[0][1].results_dir) / table_folder(name)
    try:
        out.mkdir(parents=True, exist_ok=True)
        records.write_csv(out / languages.FILE, languages.LanguageRate, rows)
    except OSError as e:
        say(f"error: cannot write {out / languages.FILE} ({e.strerror}); the runs are whole: free some space and "
            f"run `languages {' '.join(cfg.run for _, cfg in runs)}`")
        return False
    print(f"table in {out / languages.FILE}")
    return True
