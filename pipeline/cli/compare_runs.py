"""`run_pipeline.py compare-runs RUN_A RUN_B`: is B better or worse than A? A release gate with
--fail-if-worse, and a page to hear the difference (pipeline/gate/, pipeline/render/ab.py).

Its exit codes each mean one thing, so that CI can believe them: 0 the gate passed (or no gate was asked for), 1
B is worse, 2 the runs cannot be compared or an input is bad (named, with the fix), 3 a run is being written by
another process, 4 the output cannot be written; an internal error is 70 (pipeline/cli/__init__.py), never 1."""
from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from pipeline.cli.command import COMMANDS, Command, program
from pipeline.core import records, store
from pipeline.core.names import file_name
from pipeline.gate.release import RunComparison, Unmatched
from pipeline.core.registry import suggest
from pipeline.errors import ConfigError, InputError

PASS, WORSE, REFUSED, IN_USE, UNWRITABLE = 0, 1, 2, 3, 4


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{program()} compare-runs",
        description="Compare run B with run A on the same sentences, heard and scored alike: every metric "
                    "paired by sentence (Δ with a bootstrap CI, MAPSSWE / sign / Wilcoxon, Holm-corrected, and what "
                    "this many sentences could detect). Each run must be finished and as it sealed its files. "
                    f"Exit {PASS}: passed; {WORSE}: B worse (with --fail-if-worse); {REFUSED}: the runs cannot be "
                    f"compared, or a bad input; {IN_USE}: a run is being written; {UNWRITABLE}: --out cannot be "
                    "written; 70: an internal error, never a verdict.")
    p.add_argument("run_a", metavar="RUN_A", help="a results folder (results/v1) or a run name")
    p.add_argument("run_b", metavar="RUN_B", help="the run to judge against RUN_A")
    p.add_argument("--out", help="the folder for run_comparison.csv/json, unmatched.csv and ab.html, outside both "
                                 "runs (default: results/compare-<A>-vs-<B>)")
    p.add_argument("--results-dir", default="results", help="where run names are looked up (default 'results')")
    p.add_argument("--pair", action="append", default=[], metavar="VOICE_A=VOICE_B",
                   help="match a voice of A with one of B (repeatable; an empty name is the voice of a run of "
                        "recordings without a system); by default voices match by name, or the one voice of each run")
    p.add_argument("--fail-if-worse", action="store_true",
                   help="exit 1 when any metric of B is significantly worse than A's (Holm p < 0.05 over the "
                        "independent metrics, the CI excludes 0) by more than its margin; a gate that could not fail "
                        "with this many sentences says so")
    p.add_argument("--margin", action="append", default=[], metavar="METRIC=VALUE",
                   help="the least absolute change that fails the gate, e.g. wer=0.02 (defaults: wer and macro_wer "
                        "0.01, cer 0.01, any measure 0.05)")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--listening", metavar="TEST.db",
                   help="a listening test that rated both runs (`listen create A B`): one more paired metric in the "
                        "gate: listeners_mos or listeners_smos (each sentence's mean vote), listeners_wer (each "
                        "sentence's listeners' WER, from a transcription test), listeners_cmos or listeners_ab (each "
                        "vote's preference for B)")
    p.add_argument("--wait", type=float, default=0, metavar="SECONDS",
                   help="wait this long for a run that is being written (default 0: refuse at once)")
    return p


def pairs(values: list[str], what: str, empty_key: bool = False) -> dict[str, str]:
    out = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not (key or empty_key):
            raise ConfigError(f"{what} {v!r}: expected NAME=VALUE")
        out[key] = value
    return out


def margins_of(given: list[str], known: list[str]) -> dict[str, float]:
    out = {}
    for metric, value in pairs(given, "--margin").items():
        if metric not in known:
            other_headline = {"wer": "macro_wer", "macro_wer": "wer"}.get(metric)  # the runs' headline is the other
            near = (other_headline if other_headline in known else "") or suggest(metric, known) or \
                suggest(metric.replace("-", "_"), known)
            raise ConfigError(f"--margin {metric}={value}: no metric {metric!r}; {f'did you mean {near}? ' if near else ''}"
                              f"the runs' metrics: {', '.join(known)}")
        try:
            out[metric] = float(value)
        except ValueError:
            raise ConfigError(f"--margin {metric}={value}: a margin is a number, e.g. {metric}=0.02") from None
    return out


def output(given: str | None, default: Path, *runs) -> Path:
    """Where the comparison goes: a folder outside both runs, whose own seals it would break."""
    out = Path(given) if given else default
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: a file, not a folder; give a folder for run_comparison.csv, "
                          "run_comparison.json, unmatched.csv and ab.html")
    for run in runs:
        if out.resolve().is_relative_to(run.folder.resolve()):
            raise ConfigError(f"--out {out}: inside run {run.name}'s folder ({run.folder}), which the comparison "
                              "must not change; give a folder outside it")
    return out


def listened(path: str | None, a, b) -> tuple[object | None, list[str]]:
    """The listening test's ratings of both runs, and what of it could not be used."""
    if not path:
        return None, []
    from pipeline.listen import analysis, database

    conn = database.connect(path)
    try:
        return analysis.human(conn, [a, b])
    finally:
        conn.close()


def main(argv: list[str]) -> int:
    from pipeline.render import ab
    from pipeline.core import lock
    from pipeline.gate import release as runs, sealed

    args = parser().parse_args(argv)
    try:
        with contextlib.ExitStack() as held:
            for given in (args.run_a, args.run_b):
                held.enter_context(lock.reading(sealed.folder_of(given, args.results_dir), args.wait))
            a, b = sealed.load(args.run_a, args.results_dir), sealed.load(args.run_b, args.results_dir)
            refused = runs.refusals(a, b)
            if refused:
                raise InputError("these runs were scored differently, so their numbers cannot be compared:\n  - " +
                                 "\n  - ".join(refused) + "\n  Score both with the same engines, decoding options, "
                                 "normalizer, headline and measures (rerun one with --from transcribe or --from "
                                 "score)")
            human, notes = listened(args.listening, a, b)
            margins = margins_of(args.margin, runs.metrics(a, b, human=human))
            out = output(args.out, Path(args.results_dir) / f"compare-{file_name(a.name)}-vs-{file_name(b.name)}",
                         a, b)
            rows, pairing, changes = runs.compare(a, b, pairs(args.pair, "--pair", empty_key=True), args.bootstrap,
                                                  margins=margins, human=human)
            if not rows:
                raise InputError(f"{a.name} and {b.name} have no sentence in common under a shared engine and "
                                 f"condition ({len(pairing.unmatched)} sentences unpaired); compare runs made from "
                                 "the same sentences, or pair their voices with --pair")
            page = ab.render(a, b, rows, changes, pairing.unmatched, out, human)
    except lock.RunInUse as e:
        print(f"error: {e}", file=sys.stderr)
        return IN_USE
    except ConfigError as e:
        print(f"input error: {e}", file=sys.stderr)
        return REFUSED
    try:
        records.write_csv(out / "run_comparison.csv", RunComparison, rows)
        store.write_json(out / "run_comparison.json", runs.as_json(a, b, rows, pairing))
        records.write_csv(out / "unmatched.csv", Unmatched, pairing.unmatched)
        store.write_text(out / "ab.html", page)
    except OSError as e:
        print(f"error: cannot write --out {out} ({e.strerror}); free some space, make it writable, or pick another "
              "folder", file=sys.stderr)
        return UNWRITABLE
    for r in rows:
        print(r.verdict)
    for d in a.measures.values():
        if d.comparable and any(r.metric in d.columns for r in rows):
            print(f"{d.name} compares with {d.comparable}")
    for note in notes:
        print(note)
    if human and any(r.metric == human.metric for r in rows):
        print(f"{human.metric}: the accepted listeners of test {human.test!r}, " + (
            "each vote's preference for B, with a listeners × sentences interval" if human.votes else
            f"{human.per_sentence}, paired by sentence (the interval resamples sentences; the panel is taken as it "
            "is)"))
    for r in rows:
        if r.derived_from:
            print(f"{r.metric} is a function of {r.derived_from}: shown, not a test of its own")
    limit = runs.reach(rows).said(max((r.sentences for r in rows), default=0))
    if limit:
        print(limit, file=sys.stderr if args.fail_if_worse else sys.stdout)
    print(f"{sum(r.sentences for r in rows if r.metric in ('wer', 'macro_wer'))} sentences paired, "
          f"{len(pairing.unmatched)} not (unmatched.csv); listen: {out / 'ab.html'}")
    worse = [r for r in rows if r.worse]
    if args.fail_if_worse and worse:
        for r in worse:
            print(f"FAIL {r.verdict}", file=sys.stderr)
        return WORSE
    return PASS


COMMANDS.register(Command("compare-runs", "A B [options]",
                          "judge run B against run A on the same sentences: a release gate", main))
