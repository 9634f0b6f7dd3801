"""`run_pipeline.py languages RUN [RUN ...]`: one table of error rates by language, each in its own unit, from
finished runs (a run is in one language: `--language`). The language-bias view of a team with voices in several
languages: each voice × engine × condition of each run, its rate named CER or WER, with its bootstrap interval.
Rates in different units are set side by side and said not to compare; compare-runs refuses to pair them."""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from pipeline.cli.command import COMMANDS, Command, program
from pipeline.config.run import LANGUAGES_TABLE
from pipeline.core import records
from pipeline.errors import InputError
from pipeline.scoring.utterances import GroupSummary

FILE = LANGUAGES_TABLE


@dataclass(frozen=True, slots=True, kw_only=True)
class LanguageRate:
    run: str
    language: str
    unit: str  # word or character (scoring/language.py)
    rate: str  # WER or CER: what micro, macro and the interval are
    voice: str
    asr: str
    condition: str
    n_utterances: int
    micro: float | None  # Σ errors / Σ reference units
    ci95_low: float | None  # bootstrap 95% interval of micro, resampling utterances
    ci95_high: float | None
    macro: float | None  # the mean of per-utterance rates


def rates(given: list[str], results_dir: str) -> list[LanguageRate]:
    from pipeline.gate import sealed

    out = []
    for name in given:
        run = sealed.load(name, results_dir)
        lang = run.scores.language
        for s in records.read_csv(run.folder / "summary.csv", GroupSummary):
            if s.hallucination_wpm is None:  # silence has no rate
                out.append(LanguageRate(run=run.name, language=lang, unit=run.scores.unit,
                                        rate=run.scores.rate, voice=s.voice, asr=s.asr,
                                        condition=s.condition, n_utterances=s.n_utterances, micro=s.micro_wer,
                                        ci95_low=s.ci95_low, ci95_high=s.ci95_high, macro=s.macro_wer))
    return sorted(out, key=order)


def order(r: LanguageRate) -> tuple:
    return r.language, r.voice, r.asr, r.condition, r.run


def table(rows: list[LanguageRate]) -> str:
    def cell(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    head = f"{'language':<9} {'rate':<4} {'run':<14} {'voice':<16} {'asr':<24} {'condition':<12} {'n':>4} " \
           f"{'micro':>7} {'95% CI':>13} {'macro':>7}"
    lines = [head, "-" * len(head)]
    for r in rows:
        ci = f"{cell(r.ci95_low)}-{cell(r.ci95_high)}" if r.ci95_low is not None else "n/a"
        lines.append(f"{r.language:<9} {r.rate:<4} {r.run:<14} {r.voice or '-':<16} {r.asr or '-':<24} "
                     f"{r.condition or '-':<12} {r.n_utterances:>4} {cell(r.micro):>7} {ci:>13} {cell(r.macro):>7}")
    units = sorted({r.unit for r in rows})
    if len(units) > 1:
        lines.append("the rates count characters in some languages and words in others: a CER and a WER do not "
                     "compare, so read across languages as each language's own quality, not one scale")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog=f"{program()} languages", description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", metavar="RUN", help="finished runs, by folder or name, one per language or more")
    p.add_argument("--results-dir", default="results", help="where run names are looked up (default 'results')")
    p.add_argument("--out", default=None, help=f"the folder for {FILE} (default: <results-dir>/languages)")
    args = p.parse_args(argv)
    try:
        rows = rates(args.runs, args.results_dir)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = Path(args.out or Path(args.results_dir) / "languages")
    try:
        out.mkdir(parents=True, exist_ok=True)
        records.write_csv(out / FILE, LanguageRate, rows)
    except OSError as e:
        print(f"error: cannot write --out {out} ({e.strerror}); free some space or pick another folder",
              file=sys.stderr)
        return 4
    print(table(rows))
    print(f"table in {out / FILE}")
    return 0


COMMANDS.register(Command("languages", "RUN [RUN ...] [options]",
                          "one table of error rates by language, each in its own unit (CER or WER)", main))
