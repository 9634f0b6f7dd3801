"""Scaling with the number of user sentences: one voice, the default ASR, --sentences of N lines.

    .venv/bin/python bench/scale.py [--sizes 250,500,1000]

Each size runs the real pipeline in a fresh run directory (models shared), as a subprocess whose peak RSS
(ru_maxrss of the child) is recorded. Linear growth: wall per sentence stays flat; flat memory: peak RSS does not
grow with N, since audio streams to disk item by item. Writes bench/out/scale.md."""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, shakespeare_lines, write_report


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="250,500,1000")
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    pool = shakespeare_lines(max(sizes), 5, 16)
    work = Path(tempfile.mkdtemp(prefix="scale-"))
    rows = []
    for n in sizes:
        run = work / f"n{n}"
        run.mkdir()
        (run / "s.txt").write_text("\n".join(pool[:n]) + "\n")
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "--sentences", "s.txt",
                               "--set", f"models_dir={ROOT / 'models'}", "--set", "cache_dir=off"], cwd=run, capture_output=True, text=True,
                              env={**os.environ, "TQDM_DISABLE": "1"})
        wall = time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        if proc.returncode not in (0, 1):
            sys.exit(proc.stderr[-3000:])
        speech = sum(float(line.split(",")[4] or 0) for line in (run / "results/default/synthesis.csv").read_text()
                     .splitlines()[1:])
        rows.append((n, wall, speech, rss / 1024, rss > before))
        print(f"{n} sentences: {wall:.0f} s, {speech:.0f} s of speech, peak RSS {rss / 1024:.0f} MB", flush=True)
    lines = ["# Scaling with --sentences N (piper:joe, faster-whisper:base int8)", "",
             "| N | wall s | wall s per sentence | speech s | peak RSS MB (child, max so far) |", "|---|---|---|---|---|"]
    for n, wall, speech, rss, _ in rows:
        lines.append(f"| {n} | {wall:.0f} | {wall / n:.3f} | {speech:.0f} | {rss:.0f} |")
    lines += ["", "RUSAGE_CHILDREN's ru_maxrss is the largest child so far: an unchanged value for a larger N means "
              "that run used no more memory than a smaller one."]
    write_report("scale", lines)


if __name__ == "__main__":
    main()
