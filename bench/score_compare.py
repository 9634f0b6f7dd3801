"""Two systems compared at the scale of real test sets: `run_pipeline.py score` with two --hyp against NIST's way,
sclite on each system (`-o sgml`) and then sc_stats on both.

    python bench/score_compare.py [--pairs 10000,100000]

The references and both systems' hypotheses come from the bundled plays' words, as bench/score_scale.py makes them
(3-20 words a pair; system A with 15% of its words changed, B with 12%). Each tool runs as its own process; wall
time and peak RSS come from os.wait4, and NIST's side is the sum of its three processes (its peak: the largest).
Both sides score each system and run MAPSSWE, the sign and the Wilcoxon tests; ours also writes every file `score`
writes (utterances.csv, errors.csv, pralign.txt, ...) and bootstraps the intervals. MAPSSWE's segments and Z are
printed beside sc_stats' own, which they must equal. Writes bench/out/score_compare.md."""
from __future__ import annotations

import argparse
import contextlib
import csv
import random
import re
import sys
import tempfile
from pathlib import Path

from common import ROOT, cpu_name, measure, write_report
from score_scale import SCLITE, corrupt, vocabulary

SC_STATS = str(Path(SCLITE).with_name("sc_stats"))
RATES = {"a": 0.15, "b": 0.12}


def write_systems(folder: Path, lengths: list[int], vocab: list[str], seed: int) -> None:
    rng = random.Random(seed)
    with contextlib.ExitStack() as stack:
        files = {name: stack.enter_context(open(folder / f"{name}.trn", "w")) for name in ("ref", *RATES)}
        for k, n in enumerate(lengths):
            words, uid = [rng.choice(vocab) for _ in range(n)], f"spk_{k:07d}"
            files["ref"].write(f"{' '.join(words)} ({uid})\n")
            for name, rate in RATES.items():
                files[name].write(f"{' '.join(corrupt(words, vocab, rng, rate))} ({uid})\n")


def ours(folder: Path) -> tuple[float, float, int, float]:
    wall, mb, _ = measure([sys.executable, str(ROOT / "run_pipeline.py"), "score", "--ref", "ref.trn",
                           *(f"--hyp={name}={name}.trn" for name in RATES), "--normalize", "none", "--out", "out"],
                          folder)
    with open(folder / "out" / "comparisons.csv") as f:
        row = next(csv.DictReader(f))
    return wall, mb, int(row["mapsswe_segments"]), float(row["mapsswe_z"])


def nist(folder: Path) -> tuple[list[float], float, int, float]:
    walls, peak = [], 0.0
    for name in RATES:
        wall, mb, _ = measure([SCLITE, "-r", "ref.trn", "trn", "-h", f"{name}.trn", "trn", "-i", "spu_id", "-o",
                               "sgml", "-n", name], folder)
        walls.append(wall)
        peak = max(peak, mb)
    (folder / "both.sgml").write_bytes(b"".join((folder / f"{name}.sgml").read_bytes() for name in RATES))
    wall, mb, _ = measure(["sh", "-c", f"exec {SC_STATS} -p -t mapsswe sign wilc -v -n out < both.sgml"], folder)
    walls.append(wall)
    found = re.search(r"# segs: (\d+)\).*\(Z Stat: ([-\d.]+)\)", (folder / "out.stats.mapsswe").read_text())
    return walls, max(peak, mb), int(found.group(1)), float(found.group(2))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", default="10000,100000", help="comma-separated corpus sizes")
    p.add_argument("--seed", type=int, default=1337)
    args = p.parse_args()
    if not Path(SC_STATS).exists():
        sys.exit(f"{SC_STATS} is not installed (Debian's sctk package)")
    vocab, rng = vocabulary(), random.Random(args.seed)
    lines = [f"# Two systems compared ({cpu_name()})", "",
             "| pairs | ours s | ours peak MB | sclite A + sclite B + sc_stats, s | NIST s | NIST peak MB | "
             "ours ÷ NIST | MAPSSWE segments, ours / sc_stats | Z, ours / sc_stats |",
             "|---|---|---|---|---|---|---|---|---|"]
    data = {}
    for n in (int(x) for x in args.pairs.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            write_systems(folder, [rng.randint(3, 20) for _ in range(n)], vocab, args.seed)
            o, s = ours(folder), nist(folder)
        data[n] = {"ours": o, "nist": s}
        print(n, o, s, flush=True)
        lines.append(f"| {n:,} | {o[0]:.1f} | {o[1]:.0f} | {' + '.join(f'{w:.1f}' for w in s[0])} | "
                     f"{sum(s[0]):.1f} | {s[1]:.0f} | {o[0] / sum(s[0]):.2f} | {o[2]} / {s[2]} | {o[3]} / {s[3]} |")
    write_report("score_compare", lines, {str(k): v for k, v in data.items()})


if __name__ == "__main__":
    main()
