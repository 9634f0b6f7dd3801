"""Does `asr.batch_size` change what is measured? The pipeline run twice on the same lines, batch size 4 and 32.

    .venv/bin/python bench/batch_check.py [--sentences 24] [--asr faster-whisper:base]

Lines from the bundled plays, the default voice; each run in its own run directory, so no transcript is reused
from the other. Writes bench/out/batch_check.{json,md}: hypotheses that differ, and the corpus WER of each."""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from common import ROOT, shakespeare_lines, write_report

from pipeline.core import store


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sentences", type=int, default=24)
    p.add_argument("--asr", default="faster-whisper:base")
    p.add_argument("--sizes", default="4,32")
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    tmp = Path(tempfile.mkdtemp())
    lines = shakespeare_lines(args.sentences, 6, 20)
    (tmp / "lines.txt").write_text("\n".join(lines) + "\n")
    runs = {}
    for size in sizes:
        subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "--sentences", str(tmp / "lines.txt"),
                        "--asr", args.asr, "--run", f"batch{size}", "--set", f"asr.batch_size={size}",
                        "--set", f"models_dir={ROOT / 'models'}", "--set", "cache_dir=off",
                        "--set", f"results_dir={tmp / 'results'}",
                        "--set", f"speech_dir={tmp / 'audio'}"], check=True, capture_output=True, text=True)
        run = tmp / "results" / f"batch{size}"
        runs[size] = {"rows": store.read_csv(run / "utterances.csv"),
                      "wer": float(store.read_csv(run / "summary.csv")[0]["micro_wer"])}
    first = runs[sizes[0]]["rows"]
    out = [f"# Batch size vs transcripts: {len(lines)} lines, piper:joe, {args.asr}, batch sizes "
           f"{' and '.join(map(str, sizes))}", "",
           "| batch size | corpus WER | hypotheses different from batch size " + str(sizes[0]) + " |", "|---|---|---|"]
    for size in sizes:
        differ = sum(a["hypothesis"] != b["hypothesis"] for a, b in zip(first, runs[size]["rows"]))
        out.append(f"| {size} | {runs[size]['wer']:.3f} | {differ} of {len(first)} |")
    write_report("batch_check", out, {size: {"wer": r["wer"], "hypotheses": [u["hypothesis"] for u in r["rows"]]}
                                      for size, r in runs.items()})


if __name__ == "__main__":
    main()
