"""`run_pipeline.py score`: score your own transcripts; no model is loaded."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline.scoring import sclite
from pipeline.scoring.evaluate import evaluate, summary_table, write


class InputError(ValueError):
    pass


def read_lines(path: str) -> tuple[list[tuple[str, str]], bool]:
    """(id, text) pairs and whether the file was trn. Plain files get ids by line number."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: no such file")
    if sclite.is_trn(p):
        return sclite.read_trn(p), True
    lines = p.read_text(encoding="utf-8").splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    return [(f"line{n:05d}", text.strip()) for n, text in enumerate(lines, 1)], False


def pair(ref_path: str, hyp_path: str) -> list[dict]:
    refs, ref_trn = read_lines(ref_path)
    hyps, hyp_trn = read_lines(hyp_path)
    if ref_trn != hyp_trn:
        raise InputError(f"{ref_path} and {hyp_path}: one is a trn file and the other is not; give both as trn "
                         "(`text (id)` lines) or both as one utterance per line")
    if ref_trn:
        ref_ids, hyp_ids = dict(refs), dict(hyps)
        if len(ref_ids) != len(refs) or len(hyp_ids) != len(hyps):
            raise InputError("duplicate utterance ids in a trn file")
        missing, extra = sorted(set(ref_ids) - set(hyp_ids)), sorted(set(hyp_ids) - set(ref_ids))
        if missing or extra:
            raise InputError(f"ids do not match: {len(missing)} only in {ref_path} (e.g. {missing[:3]}), "
                             f"{len(extra)} only in {hyp_path} (e.g. {extra[:3]})")
        return [{"sentence_id": uid, "reference": text, "hypothesis": hyp_ids[uid], "status": "ok"}
                for uid, text in refs]
    if len(refs) != len(hyps):
        raise InputError(f"{ref_path} has {len(refs)} lines but {hyp_path} has {len(hyps)}; "
                         "they must pair line by line (or use trn files with ids)")
    return [{"sentence_id": uid, "reference": r, "hypothesis": h, "status": "ok"}
            for (uid, r), (_, h) in zip(refs, hyps)]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="run_pipeline.py score",
                                description="Score hypotheses against references: WER with alignment breakdown.")
    p.add_argument("--ref", required=True, help="references: one utterance per line, or a sclite trn file")
    p.add_argument("--hyp", required=True, help="hypotheses, in the same form as --ref")
    p.add_argument("--normalize", choices=["none", "basic", "whisper"], default="basic")
    p.add_argument("--out", default="results/score", help="output directory (default results/score)")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the 95%% CI")
    args = p.parse_args(argv)
    try:
        rows = pair(args.ref, args.hyp)
    except (InputError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    results = evaluate(rows, args.normalize, args.bootstrap)
    write(results, args.out)
    print(summary_table(results))
    print(f"results in {args.out}/")
    return 0
