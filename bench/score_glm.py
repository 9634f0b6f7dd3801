"""NIST's hubscr.pl scoring of trn files, ours against sctk's own tools: `run_pipeline.py score --glm GLM --normalize
sclite --optional-words --fragments` against `csrfilt.sh -i trn -t ref|hyp -dh GLM` on each file and then `sclite
-D -F`, with `score` without the GLM as the baseline of the same run.

    python bench/score_glm.py --glm en20090415.glm [--pairs 20000]

The GLM is yours to give: NIST's English ones are in sctk's sources (doc/trans_rules/en20090415.glm; Switchboard's
en20000405_hub5.glm comes with the Hub5 2000 evaluation). The pairs are conversational words with contractions,
possessives, backchannels and hyphenated words, which that GLM rewrites (3-20 words, 10% of the hypothesis' words
changed). Each tool runs as its own process (wall time and peak RSS from os.wait4). Every utterance's counts are
then compared with sclite's pralign, and the number that differ printed: it must be 0. Writes bench/out/score_glm.md."""
from __future__ import annotations

import argparse
import csv
import os
import random
import sys
import tempfile
from pathlib import Path

from common import ROOT, cpu_name, measure, write_report
from score_scale import SCLITE

sys.path.insert(0, str(ROOT))
from tests.helpers import pralign_rows  # noqa: E402

CSRFILT = str(Path(SCLITE).with_name("csrfilt.sh"))
WORDS = ("we are gonna go to the firm's office uh-huh she's a well-known x-ray ok i think it's you know yeah um the "
         "cat sat on mat").split()
COUNTS = ("hits", "substitutions", "deletions", "insertions")


def write_pairs(folder: Path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    with open(folder / "ref.trn", "w") as ref, open(folder / "hyp.trn", "w") as hyp:
        for k in range(n):
            words = [rng.choice(WORDS) for _ in range(rng.randint(3, 20))]
            heard = [w if rng.random() > 0.1 else rng.choice(WORDS) for w in words]
            uid = f"s{k % 50}_u{k}"
            ref.write(f"{' '.join(words)} ({uid})\n")
            hyp.write(f"{' '.join(heard)} ({uid})\n")


def ours(folder: Path, glm: str | None) -> tuple[float, float]:
    wall, mb, _ = measure([sys.executable, str(ROOT / "run_pipeline.py"), "score", "--ref", "ref.trn", "--hyp",
                           "hyp.trn", *(["--glm", glm] if glm else []), "--normalize", "sclite", "--optional-words",
                           "--fragments", "--out", "glm" if glm else "plain"], folder)
    return wall, mb


def nist(folder: Path, glm: str) -> tuple[list[float], float]:
    env = {**os.environ, "PATH": f"{Path(CSRFILT).parent}:{os.environ['PATH']}"}
    walls, peak = [], 0.0
    for side in ("ref", "hyp"):
        wall, mb, _ = measure(["sh", "-c", f"exec {CSRFILT} -i trn -t {side} -dh {glm} < {side}.trn > {side}.filt"],
                              folder, env)
        walls.append(wall)
        peak = max(peak, mb)
    wall, mb, _ = measure(["sh", "-c", f"exec {SCLITE} -r ref.filt trn -h hyp.filt trn -i spu_id -D -F -o pralign "
                                       "stdout > pralign.txt"], folder)
    return [*walls, wall], max(peak, mb)


def differing(folder: Path) -> int:
    theirs = pralign_rows((folder / "pralign.txt").read_text())
    with open(folder / "glm" / "utterances.csv") as f:
        mine = {r["id"].lower(): tuple(int(r[c]) for c in COUNTS) for r in csv.DictReader(f)}
    return sum(mine.get(uid) != counts for uid, (counts, _, _) in theirs.items()) + abs(len(mine) - len(theirs))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--glm", required=True, help="the GLM file (sctk's doc/trans_rules/en20090415.glm)")
    p.add_argument("--pairs", type=int, default=20_000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if not Path(CSRFILT).exists():
        sys.exit(f"{CSRFILT} is not installed (Debian's sctk package)")
    glm = str(Path(args.glm).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_pairs(folder, args.pairs, args.seed)
        plain, with_glm, (walls, nist_mb) = ours(folder, None), ours(folder, glm), nist(folder, glm)
        wrong = differing(folder)
    lines = [f"# hubscr.pl's scoring of trn files ({cpu_name()}; load average {os.getloadavg()[0]:.1f} at the end)",
             "", f"{args.pairs:,} pairs; GLM {Path(glm).name}; utterances whose counts differ from sclite's: {wrong}",
             "", "| | s | peak MB |", "|---|---|---|",
             f"| `score --normalize sclite --optional-words --fragments` (no GLM: the baseline) | {plain[0]:.1f} | "
             f"{plain[1]:.0f} |",
             f"| the same with `--glm` | {with_glm[0]:.1f} | {with_glm[1]:.0f} |",
             f"| csrfilt.sh on ref + on hyp + `sclite -D -F` | {' + '.join(f'{w:.1f}' for w in walls)} = "
             f"{sum(walls):.1f} | {nist_mb:.0f} |",
             "", f"`--glm` ÷ the baseline: {with_glm[0] / plain[0]:.2f}; ÷ NIST's: {with_glm[0] / sum(walls):.2f}"]
    write_report("score_glm", lines, {"pairs": args.pairs, "plain": plain, "glm": with_glm, "nist": [walls, nist_mb],
                                      "differing": wrong})


if __name__ == "__main__":
    main()
