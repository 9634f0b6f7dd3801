"""`run_pipeline.py score`: score your own transcripts; no model is loaded."""
from __future__ import annotations

import argparse
import sys

from pipeline.cli.command import COMMANDS, Command, program
from pipeline.config import recipes
from pipeline.config.run import preset
from pipeline.core.options import add_flags, apply, check, given
from pipeline.scoring.utterances import Pair
from pipeline.errors import ConfigError, InputError
from pipeline.io.inputs import read_text
from pipeline.scoring import language, sclite
from pipeline.scoring.config import ScoreConfig
from pipeline.scoring.evaluate import evaluate
from pipeline.render.terminal import summary_table
from pipeline.scoring.files import write


def read_lines(path: str, flag: str) -> tuple[list[tuple[str, str]], bool]:
    """(id, text) pairs and whether the file was trn. Plain files get ids by line number, and every line is an
    utterance, empty ones too: an engine that heard nothing wrote an empty line."""
    text = read_text(path, flag)
    trn = sclite.read_trn(text)
    if trn is not None:
        return trn, True
    return [(f"line{n:05d}", line.strip()) for n, line in enumerate(text.splitlines(), 1)], False


def read_pairs(ref_path: str, hyp_path: str) -> list[Pair]:
    refs, ref_trn = read_lines(ref_path, "--ref")
    hyps, hyp_trn = read_lines(hyp_path, "--hyp")
    if ref_trn != hyp_trn:
        raise InputError(f"{ref_path} and {hyp_path}: one is a trn file and the other is not; give both as trn "
                         "(`text (id)` lines) or both as one utterance per line")
    if ref_trn:
        ref_ids, hyp_ids = dict(refs), dict(hyps)
        for flag, path, pairs, ids in (("--ref", ref_path, refs, ref_ids), ("--hyp", hyp_path, hyps, hyp_ids)):
            if len(ids) != len(pairs):
                raise InputError(f"{flag} {path}: the same utterance id twice; ids in a trn file must be unique")
        missing, extra = sorted(set(ref_ids) - set(hyp_ids)), sorted(set(hyp_ids) - set(ref_ids))
        if missing or extra:
            raise InputError(f"ids do not match: {len(missing)} only in {ref_path} (e.g. {missing[:3]}), "
                             f"{len(extra)} only in {hyp_path} (e.g. {extra[:3]})")
        return [Pair(sentence_id=uid, reference=text, hypothesis=hyp_ids[uid]) for uid, text in refs]
    if len(refs) != len(hyps):
        raise InputError(f"--ref {ref_path} has {len(refs)} lines but --hyp {hyp_path} has {len(hyps)}; they pair "
                         "line by line, empty lines included (or use trn files with ids)")
    return [Pair(sentence_id=uid, reference=r, hypothesis=h) for (uid, r), (_, h) in zip(refs, hyps)]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog=f"{program()} score",
                                description="Score hypotheses against references: WER with alignment breakdown.")
    p.add_argument("--ref", required=True, help="references: one utterance per line, or a sclite trn file")
    p.add_argument("--hyp", required=True, help="hypotheses, in the same form as --ref")
    dests = add_flags(p, ScoreConfig(), every_field=True, keys=False)
    p.add_argument("--language", default=None,
                   help="the references' language (ISO 639, as a run's --language): characters are the unit for "
                        f"{', '.join(language.CHARACTER_LANGUAGES)} (CER), words elsewhere (default en, or the "
                        "preset's)")
    p.add_argument("--preset", default=None, choices=recipes.names(),
                   help="score as a published recipe scores (its normalizer, headline and language); what it says "
                        "of the ASR is yours to keep: the hypotheses' engine is not known here")
    p.add_argument("--out", default="results/score", help="output directory (default results/score)")
    args = p.parse_args(argv)
    cfg, lang, comparable = ScoreConfig(), args.language or "en", None
    try:
        if args.preset:
            values = preset(args.preset)
            cfg = apply(cfg, values.get("score", {}))
            lang = args.language or values.get("asr", {}).get("language", "en")
            comparable = recipes.scored_alone(args.preset, lang)
        cfg = apply(cfg, given(args, dests))
        check(cfg)
        pairs = read_pairs(args.ref, args.hyp)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    results = evaluate(pairs, cfg, comparable=comparable, language=lang)
    try:
        write(results, args.out)
    except OSError as e:
        print(f"error: cannot write --out {args.out} ({e.strerror}); free some space or pick another directory",
              file=sys.stderr)
        return 4
    print(summary_table(results.summary, len(results.utterances), macro_first=cfg.headline == "macro",
                        rate=results.rate))
    if comparable:
        print(f"{results.rate}: {comparable.line}")
    print(f"results in {args.out}/")
    return 0


COMMANDS.register(Command("score", "--ref REF --hyp HYP [options]",
                          "score your own transcripts against references; loads no model", main))
