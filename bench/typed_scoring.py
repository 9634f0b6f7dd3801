"""Scoring typed answers (listen/typed.py, strict and tolerant) against jiwer's plain word alignment of the same
pairs, in the same run: the issue's goal is 10,000 answers with both rules under 2 s.

    python bench/typed_scoring.py [--answers 10000]

Answers are Shakespeare lines retyped with seeded slips: a word dropped, a homophone, a misspelling, a word
joined to the next, a number in digits. The CMU dictionary's load is timed apart (once a process)."""
from __future__ import annotations

import argparse
import random
import sys
import time

from common import ROOT, cpu_name, shakespeare_lines, write_report

sys.path.insert(0, str(ROOT))

SLIPS = {"night": "knight", "there": "their", "receive": "recieve", "one": "1", "to": "too", "sea": "see"}


def answers(n: int, seed: int = 0) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    lines = shakespeare_lines(200, 6, 20)
    out = []
    for _ in range(n):
        words = rng.choice(lines).split()
        typed = []
        for w in words:
            r = rng.random()
            if r < 0.05:
                continue
            typed.append(SLIPS.get(w.lower(), w) if r < 0.3 else w[:-1] + w[-1] * 2 if r < 0.33 and len(w) > 4 else w)
        out.append((" ".join(words), " ".join(typed)))
    return out


def main() -> None:
    import os

    import jiwer

    from pipeline.listen import typed

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--answers", type=int, default=10_000)
    args = p.parse_args()
    pairs = answers(args.answers)
    t0 = time.perf_counter()
    typed.pronunciations()
    typed.score("warm", "warm")
    load = time.perf_counter() - t0
    t0 = time.perf_counter()
    for reference, given in pairs:
        jiwer.process_words(reference.lower(), given.lower())
    baseline = time.perf_counter() - t0
    t0 = time.perf_counter()
    scored = [typed.score(reference, given) for reference, given in pairs]
    ours = time.perf_counter() - t0
    forgiven = sum(len(s.rules) for s in scored)
    lines = [f"# Typed answers scored, strict and tolerant ({cpu_name()}, load {os.getloadavg()[0]:.1f})", "",
             "| what | seconds | × jiwer |", "|---|---|---|",
             f"| jiwer.process_words, lowercase only (baseline) | {baseline:.2f} | 1.00 |",
             f"| listen/typed.score: normalizer, compounds, alignment, both rules | {ours:.2f} | "
             f"{ours / baseline:.2f} |",
             f"| the CMU dictionary's load, once a process | {load:.2f} | |", "",
             f"{args.answers} answers; {forgiven} words forgiven by a tolerant rule. Goal: under 2 s: "
             f"{'met' if ours < 2 else 'not met'}."]
    write_report("typed_scoring", lines, {"answers": args.answers, "baseline_s": baseline, "ours_s": ours,
                                          "load_s": load, "forgiven": forgiven})


if __name__ == "__main__":
    main()
