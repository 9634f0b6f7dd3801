"""Score a table of (reference, hypothesis) rows: per-utterance counts, error events, confusion pairs and
corpus figures per voice × engine × condition. Used by the pipeline and by `run_pipeline.py score`."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pipeline import store
from pipeline.conditions import SILENCE
from pipeline.scoring import normalize as norm
from pipeline.scoring import sclite
from pipeline.scoring.align import Alignment, align_text
from pipeline.scoring.flags import NAMES as FLAGS
from pipeline.scoring.flags import flags
from pipeline.scoring.stats import corpus_wer, spearman

UTTERANCE_COLUMNS = [
    "id", "sentence_id", "voice", "asr", "condition", "reference", "hypothesis", "reference_normalized",
    "hypothesis_normalized", "ref_words", "hits", "substitutions", "deletions", "insertions", "errors", "wer",
    "perplexity", "lm_tokens", "audio_path", "audio_seconds", "tts_seconds", "asr_seconds", "status", "error",
    "flags", "level_dbfs", "audio_sha256"]
EVENT_COLUMNS = ["id", "type", "reference_word", "hypothesis_word", "position"]
CONFUSION_COLUMNS = ["voice", "asr", "condition", "reference_word", "hypothesis_word", "count"]
SUMMARY_COLUMNS = ["voice", "asr", "condition", "normalizer", "n_utterances", "n_excluded", "ref_words", "errors",
                   "micro_wer", "macro_wer", "ci95_low", "ci95_high", "spearman_n", "spearman_rho", "spearman_p",
                   "flagged", *FLAGS, "hallucination_wpm"]
TYPE_NAMES = {"S": "substitution", "D": "deletion", "I": "insertion"}


def utterance_id(row: dict) -> str:
    system = "-".join(p for p in (row.get("voice", ""), row.get("condition", ""), row.get("asr", "")) if p)
    parts = [sclite.trn_id(system.replace(":", "-").replace("=", "")), sclite.trn_id(row["sentence_id"])]
    return "_".join(p for p in parts if p)


@dataclass
class Results:
    normalizer: str
    utterances: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    confusions: list[dict] = field(default_factory=list)
    summary: list[dict] = field(default_factory=list)
    alignments: dict[str, Alignment] = field(default_factory=dict)

    @property
    def failed(self) -> int:
        return sum(1 for u in self.utterances if u["status"] == "error")


def _fmt(x: float | None, digits: int = 4):
    return "" if x is None else round(x, digits)


def _float(x) -> float | None:
    return None if x in ("", None) else float(x)


def hallucination_wpm(members: list[dict]) -> float | None:
    """Words an engine wrote per minute of audio in which nothing was said (the silence condition)."""
    minutes = sum(_float(u["audio_seconds"]) or 0.0 for u in members) / 60
    return sum(len(u["hypothesis_normalized"].split()) for u in members) / minutes if minutes else None


def evaluate(rows: list[dict], normalizer: str = "basic", n_boot: int = 1000, seed: int = 1337) -> Results:
    """rows carry sentence_id, reference, hypothesis, status and optionally voice, asr, condition, perplexity,
    lm_tokens, audio_path, audio_seconds, tts_seconds, asr_seconds, error, level_dbfs, audio_sha256.

    Rows of the silence condition are scored against an empty reference: nothing was said, so every word
    heard is an insertion; they have no WER and give their group's hallucination rate instead."""
    transform = norm.get(normalizer)
    out = Results(normalizer)
    for row in rows:
        u = {c: row.get(c, "") for c in UTTERANCE_COLUMNS}
        u["id"] = utterance_id(row)
        u["status"] = row.get("status") or "ok"
        speech_expected = row.get("condition") != SILENCE
        if not speech_expected:
            u["reference"] = ""
        if u["status"] == "ok":
            u["reference_normalized"] = transform(u["reference"])
            u["hypothesis_normalized"] = transform(row["hypothesis"])
            a = align_text(u["reference_normalized"], u["hypothesis_normalized"])
            u.update(ref_words=a.ref_words, hits=a.hits, substitutions=a.substitutions, deletions=a.deletions,
                     insertions=a.insertions, errors=a.errors, wer=_fmt(a.wer))
            u["flags"] = ";".join(flags(u["reference_normalized"], u["hypothesis_normalized"],
                                        _float(row.get("level_dbfs")), speech_expected))
            if a.ref_words == 0 and speech_expected:  # no rate exists; flagged and kept out of the corpus figures
                u["status"] = "empty_reference"
                u["error"] = "reference is empty after normalization; left out of corpus WER"
            out.alignments[u["id"]] = a
            for pos, (op, r, h) in enumerate(a.ops):
                if op != "H":
                    out.events.append({"id": u["id"], "type": TYPE_NAMES[op], "reference_word": r or "",
                                       "hypothesis_word": h or "", "position": pos})
        out.utterances.append(u)
    groups: dict[tuple, list[dict]] = {}
    for u in out.utterances:
        groups.setdefault((u["voice"], u["asr"], u["condition"]), []).append(u)
    for (voice, engine, condition), members in groups.items():
        scored = [u for u in members if u["status"] == "ok"]
        c = corpus_wer([u["errors"] for u in scored], [u["ref_words"] for u in scored], n_boot, seed)
        rated = [u for u in scored if u["wer"] != ""]
        rho = spearman([_float(u["perplexity"]) for u in rated], [u["wer"] for u in rated])
        flag_counts = Counter(f for u in members for f in u["flags"].split(";") if f)
        silent = condition == SILENCE
        out.summary.append({"voice": voice, "asr": engine, "condition": condition, "normalizer": normalizer,
                            "n_utterances": c.n_utterances, "n_excluded": len(members) - len(scored),
                            "ref_words": c.ref_words, "errors": c.errors, "micro_wer": _fmt(c.micro_wer),
                            "macro_wer": _fmt(c.macro_wer), "ci95_low": _fmt(c.ci_low), "ci95_high": _fmt(c.ci_high),
                            "spearman_n": rho.n, "spearman_rho": _fmt(rho.rho), "spearman_p": _fmt(rho.p, 6),
                            "flagged": sum(1 for u in members if u["flags"]), **{f: flag_counts[f] for f in FLAGS},
                            "hallucination_wpm": _fmt(hallucination_wpm(scored), 2) if silent else ""})
        scored_ids = {u["id"] for u in scored}
        pairs = Counter((e["reference_word"], e["hypothesis_word"]) for e in out.events
                        if e["type"] == "substitution" and e["id"] in scored_ids)
        for (r, h), count in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0])):
            out.confusions.append({"voice": voice, "asr": engine, "condition": condition,
                                   "reference_word": r, "hypothesis_word": h, "count": count})
    return out


def dtl(results: Results, top: int = 20) -> str:
    """sclite dtl-style text: confusion pairs and the most deleted and inserted words, per group."""
    lines = [f"Normalizer: {results.normalizer}", ""]
    for s in results.summary:
        group = (s["voice"], s["asr"], s["condition"])
        ids = {u["id"] for u in results.utterances if (u["voice"], u["asr"], u["condition"]) == group}
        events = [e for e in results.events if e["id"] in ids]
        lines.append(f"== voice {s['voice'] or '-'} | asr {s['asr'] or '-'} | condition {s['condition'] or '-'}: "
                     f"micro WER {s['micro_wer']}, macro WER {s['macro_wer']}, {s['errors']} errors / "
                     f"{s['ref_words']} words")
        for title, kind, word in (("CONFUSION PAIRS", "substitution", None),
                                  ("DELETIONS", "deletion", "reference_word"),
                                  ("INSERTIONS", "insertion", "hypothesis_word")):
            if word is None:
                counts = Counter(f"{e['reference_word']} ==> {e['hypothesis_word']}" for e in events
                                 if e["type"] == kind)
            else:
                counts = Counter(e[word] for e in events if e["type"] == kind)
            lines.append(f"{title} (total {sum(counts.values())}, top {top})")
            for text, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]:
                lines.append(f"  {count:4d}: {text}")
        lines.append("")
    return "\n".join(lines)


def write(results: Results, out_dir: str | Path) -> list[Path]:
    """All results files; the same set whether the pipeline or `score` produced them."""
    out = Path(out_dir)
    files = {
        "utterances.csv": lambda p: store.write_csv(p, results.utterances, UTTERANCE_COLUMNS),
        "errors.csv": lambda p: store.write_csv(p, results.events, EVENT_COLUMNS),
        "confusions.csv": lambda p: store.write_csv(p, results.confusions, CONFUSION_COLUMNS),
        "summary.csv": lambda p: store.write_csv(p, results.summary, SUMMARY_COLUMNS),
        "summary.json": lambda p: store.write_json(p, {"normalizer": results.normalizer, "groups": results.summary}),
        "ref.trn": lambda p: store.write_text(p, sclite.write_trn(
            [(u["id"], u["reference_normalized"]) for u in results.utterances if u["id"] in results.alignments])),
        "hyp.trn": lambda p: store.write_text(p, sclite.write_trn(
            [(u["id"], u["hypothesis_normalized"]) for u in results.utterances if u["id"] in results.alignments])),
        "pralign.txt": lambda p: store.write_text(p, "".join(
            sclite.pralign(uid, a) + "\n" for uid, a in results.alignments.items())),
        "dtl.txt": lambda p: store.write_text(p, dtl(results)),
    }
    written = []
    for name, writer in files.items():
        writer(out / name)
        written.append(out / name)
    return written


def summary_table(results: Results) -> str:
    """A short fixed-width table for the terminal, then the health flags and the hallucination rates."""
    head = f"{'voice':<16} {'asr':<24} {'condition':<14} {'n':>4} {'micro WER':>9} {'macro WER':>9} {'95% CI':>15}"
    lines = [head, "-" * len(head)]
    for s in results.summary:
        ci = f"{s['ci95_low']:.3f}-{s['ci95_high']:.3f}" if s["ci95_low"] != "" else "n/a"
        micro = f"{s['micro_wer']:.3f}" if s["micro_wer"] != "" else "n/a"
        macro = f"{s['macro_wer']:.3f}" if s["macro_wer"] != "" else "n/a"
        if s["hallucination_wpm"] != "":
            micro, macro, ci = "", "", f"{s['hallucination_wpm']:.1f} words/min"
        lines.append(f"{s['voice'] or '-':<16} {s['asr'] or '-':<24} {s['condition'] or '-':<14} "
                     f"{s['n_utterances']:>4} {micro:>9} {macro:>9} {ci:>15}")
    counts = {f: sum(s[f] for s in results.summary) for f in FLAGS}
    flagged = sum(s["flagged"] for s in results.summary)
    named = ", ".join(f"{f} {n}" for f, n in counts.items() if n)
    lines.append(f"{flagged} of {len(results.utterances)} utterances flagged" +
                 (f" ({named}): see the flags column" if flagged else ""))
    if any(s["hallucination_wpm"] != "" for s in results.summary):
        lines.append("silence rows: words written per minute of audio with no speech (they have no WER)")
    return "\n".join(lines)
