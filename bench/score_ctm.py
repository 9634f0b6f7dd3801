"""A ctm reference scored as sclite scores it: `run_pipeline.py score --ref ref.ctm --hyp hyp.ctm --normalize sclite`
against `sclite -r ref.ctm ctm -h hyp.ctm ctm`, as the ratio of their times in the same run.

    python bench/score_ctm.py [--files 20] [--words 2500]

The files are tests/test_ctm_reference.py's random ones: a reference of `--files` files of one or two channels, each
of half `--words` to `--words` words, a tenth of them fragments and hesitations written as ctm alternations with a
way of no word (`{ th- / @ }`), whose alignment weighs a `@` in sclite's floats; the hypothesis the same words, some
left out, changed, moved or added. Each tool runs as its own process (wall time and peak RSS from os.wait4), and
every chunk's counts are then compared with sclite's pralign: the number that differ must be 0. Writes
bench/out/score_ctm.md."""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
from pathlib import Path

from common import ROOT, cpu_name, measure, write_report
from score_scale import SCLITE

sys.path.insert(0, str(ROOT))
from tests.helpers import pralign_rows, utterance_counts  # noqa: E402
from tests.test_ctm_reference import random_files  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--files", type=int, default=20)
    p.add_argument("--words", type=int, default=2500, help="the most words of a channel")
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    if not Path(SCLITE).exists():
        sys.exit(f"{SCLITE} is not installed (Debian's sctk package)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        random_files(random.Random(args.seed), folder, args.files, args.words)
        lines = [len((folder / f"{side}.ctm").read_text().splitlines()) for side in ("ref", "hyp")]
        ours, ours_mb, _ = measure([sys.executable, str(ROOT / "run_pipeline.py"), "score", "--ref", "ref.ctm",
                                    "--hyp", "hyp.ctm", "--normalize", "sclite", "--out", "out"], folder)
        theirs, theirs_mb, _ = measure(["sh", "-c", f"exec {SCLITE} -r ref.ctm ctm -h hyp.ctm ctm -o pralign stdout "
                                                    "> pralign.txt"], folder)
        counted = {uid: c for uid, (c, _, _) in pralign_rows((folder / "pralign.txt").read_text()).items()}
        mine = utterance_counts(folder / "out")
        wrong = sum(mine.get(uid) != c for uid, c in counted.items()) + abs(len(mine) - len(counted))
    report = [f"# A ctm reference scored as sclite scores it ({cpu_name()}; load average {os.getloadavg()[0]:.1f} at "
              "the end)", "",
              f"{lines[0]:,} reference lines and {lines[1]:,} hypothesis lines ({args.files} files, at most "
              f"{args.words:,} words a channel); {len(counted):,} chunks; chunks whose counts differ from sclite's: "
              f"{wrong}", "", "| | s | peak MB |", "|---|---|---|",
              f"| `score --ref ref.ctm --hyp hyp.ctm --normalize sclite` | {ours:.1f} | {ours_mb:.0f} |",
              f"| `sclite -r ref.ctm ctm -h hyp.ctm ctm` | {theirs:.2f} | {theirs_mb:.0f} |", "",
              f"`score` ÷ sclite: {ours / theirs:.1f}"]
    write_report("score_ctm", report, {"files": args.files, "words": args.words, "lines": lines,
                                       "ours": [ours, ours_mb], "sclite": [theirs, theirs_mb], "differing": wrong})


if __name__ == "__main__":
    main()
