"""Scoring a second version of a voice, most of whose wavs are byte-equal to the first's, through the cache every
run shares (pipeline/exec/items.py):

    python bench/shared_cache.py [--lines 40] [--changed 4]

Speaks `lines` Shakespeare lines with Piper joe into v1/, copies them to v2/ with `changed` of them spoken by
espeak instead, and scores v1, then v2 under another run name, each from a fresh process with a cache of its own
(the default engine and measures). The second run transcribes and assesses only the changed wavs. Writes
bench/out/shared_cache.md with each run's wall time and its stages' times."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, cpu_name, shakespeare_lines, write_report

sys.path.insert(0, str(ROOT))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lines", type=int, default=40)
    p.add_argument("--changed", type=int, default=4)
    args = p.parse_args()
    from pipeline.io import audio
    from pipeline.tts import base

    work = Path(tempfile.mkdtemp(prefix="shared_cache-"))
    joe, espeak = base.load("piper:joe"), base.load("espeak:en-us")
    lines = shakespeare_lines(args.lines, 4, 30)
    (work / "v1").mkdir()
    for i, text in enumerate(lines):
        audio.write_wav(work / "v1" / f"u{i:03d}.wav", *joe.synthesize(text))
    shutil.copytree(work / "v1", work / "v2")
    for i in range(args.changed):
        audio.write_wav(work / "v2" / f"u{i:03d}.wav", *espeak.synthesize(lines[i]))
    (work / "meta.lst").write_text("".join(f"u{i:03d}|{t}\n" for i, t in enumerate(lines)))
    rows = []
    for run in ("v1", "v2"):
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "--audio-manifest", "meta.lst",
                               "--audio-dir", run, "--run", run, "--set", f"models_dir={ROOT / 'models'}",
                               "--set", f"cache_dir={work / 'cache'}"], cwd=work, capture_output=True, text=True,
                              env={**os.environ, "TQDM_DISABLE": "1"})
        wall = time.perf_counter() - t0
        if proc.returncode not in (0, 1):
            sys.exit(proc.stderr[-3000:])
        manifest = json.loads((work / "results" / run / "manifest.json").read_text())
        seconds, results = manifest["stage_seconds"], manifest["stage_results"]
        rows.append(f"| {run} | {wall:.1f} | {seconds['transcribe']:.1f} ({results['transcribe']['reused']} reused) | "
                    f"{seconds['assess']:.1f} ({results['assess']['reused']} reused) |")
    shutil.rmtree(work, ignore_errors=True)
    write_report("shared_cache", [
        f"# A second version through the shared cache ({cpu_name()})", "",
        f"{args.lines} lines; v2 has {args.changed} of them spoken anew, the rest byte-equal to v1's. Default engine "
        "and measures; each run a fresh process.", "",
        "| run | wall s | transcribe s | assess s |", "|---|---|---|---|", *rows])


if __name__ == "__main__":
    main()
