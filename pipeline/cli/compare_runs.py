"""`run_pipeline.py compare-runs RUN_A RUN_B`: is B better or worse than A? A release gate with
--fail-if-worse, and a page to hear the difference (pipeline/scoring/runs.py, pipeline/render/ab.py)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline.core import records, store
from pipeline.core.names import file_name
from pipeline.core.records import RunComparison, Unmatched
from pipeline.errors import ConfigError, InputError


def parser() -> argparse.ArgumentParser:
    from pipeline.cli import program

    p = argparse.ArgumentParser(
        prog=f"{program()} compare-runs",
        description="Compare run B with run A on the same sentences, heard and scored alike: every metric "
                    "paired by sentence (Δ with a bootstrap CI, MAPSSWE / sign / Wilcoxon, Holm-corrected). "
                    "Exit 0; 1 with --fail-if-worse when B is significantly worse beyond a margin; 2 when the "
                    "runs cannot be compared.")
    p.add_argument("run_a", metavar="RUN_A", help="a results folder (results/v1) or a run name")
    p.add_argument("run_b", metavar="RUN_B", help="the run to judge against RUN_A")
    p.add_argument("--out", help="where to write run_comparison.csv/json, unmatched.csv and ab.html "
                                 "(default: results/compare-<A>-vs-<B>)")
    p.add_argument("--results-dir", default="results", help="where run names are looked up (default 'results')")
    p.add_argument("--pair", action="append", default=[], metavar="VOICE_A=VOICE_B",
                   help="match a voice of A with one of B (repeatable); by default voices match by name, or the "
                        "one voice of each run")
    p.add_argument("--fail-if-worse", action="store_true",
                   help="exit 1 when any metric of B is significantly worse than A's (Holm p < 0.05, the CI "
                        "excludes 0) by more than its margin")
    p.add_argument("--margin", action="append", default=[], metavar="METRIC=VALUE",
                   help="the least absolute change that fails the gate, e.g. wer=0.02 (defaults: wer 0.01, cer "
                        "0.01, any measure 0.05)")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (default 1000)")
    return p


def pairs(values: list[str], what: str) -> dict[str, str]:
    out = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key:
            raise ConfigError(f"{what} {v!r}: expected NAME=VALUE")
        out[key] = value
    return out


def main(argv: list[str]) -> int:
    from pipeline.render import ab
    from pipeline.scoring import runs

    args = parser().parse_args(argv)
    try:
        margins = {k: float(v) for k, v in pairs(args.margin, "--margin").items()}
    except ValueError:
        print(f"input error: --margin {args.margin}: a margin is a number, e.g. wer=0.02", file=sys.stderr)
        return 2
    try:
        a, b = runs.load(args.run_a, args.results_dir), runs.load(args.run_b, args.results_dir)
        refused = runs.refusals(a, b)
        if refused:
            raise InputError("these runs were scored differently, so their numbers cannot be compared:\n  - " +
                             "\n  - ".join(refused) + "\n  Score both with the same engines, decoding options, "
                             "normalizer and measures (rerun one with --from transcribe or --from score)")
        rows, pairing, changes = runs.compare(a, b, pairs(args.pair, "--pair"), args.bootstrap, margins=margins)
        if not rows:
            raise InputError(f"{a.name} and {b.name} have no sentence in common under a shared engine and "
                             f"condition ({len(pairing.unmatched)} sentences unpaired); compare runs made from the "
                             "same sentences, or pair their voices with --pair")
    except ConfigError as e:
        print(f"input error: {e}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else Path(args.results_dir) / f"compare-{file_name(a.name)}-vs-{file_name(b.name)}"
    records.write_csv(out / "run_comparison.csv", RunComparison, rows)
    store.write_json(out / "run_comparison.json", runs.as_json(a, b, rows, pairing))
    records.write_csv(out / "unmatched.csv", Unmatched, pairing.unmatched)
    store.write_text(out / "ab.html", ab.render(a.name, b.name, rows, changes, pairing.unmatched, out))
    for r in rows:
        print(r.verdict)
    print(f"{sum(r.sentences for r in rows if r.metric == 'wer')} sentences paired, {len(pairing.unmatched)} not "
          f"(unmatched.csv); listen: {out / 'ab.html'}")
    worse = [r for r in rows if r.worse]
    if args.fail_if_worse and worse:
        for r in worse:
            print(f"FAIL {r.verdict}", file=sys.stderr)
        return 1
    return 0
