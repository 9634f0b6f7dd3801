"""What a run prints on the terminal: the groups' headline WER with its CI and the most confident comparisons,
the health flags and hallucination rates, and the rows that failed."""
from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.core.records import Status
from pipeline.scoring.flags import NAMES as FLAGS
from pipeline.scoring.utterances import GroupSummary, ScoredUtterance

if TYPE_CHECKING:  # a type only: `score` prints its table without importing the statistics
    from pipeline.statistics.comparisons import Comparison


def summary_table(summary: list[GroupSummary], n_utterances: int, confident: list[Comparison] = (),
                  macro_first: bool = False, rate: str = "WER") -> str:
    """A short fixed-width table for the terminal (the headline rate first, with its own CI, and the rows each
    group left out), the most confident comparisons, then the health flags and the hallucination rates. `rate`:
    CER where the unit is the character (scoring/language.py)."""
    first, second = ("macro", "micro") if macro_first else ("micro", "macro")
    rates = f"{first + ' ' + rate:>9} {second + ' ' + rate:>9}"
    head = (f"{'voice':<16} {'asr':<24} {'condition':<14} {'n':>4} {'excluded':>8} {rates} "
            f"{first + ' 95% CI':>15}")
    lines = [head, "-" * len(head)]
    for s in summary:
        low, high = (s.macro_ci95_low, s.macro_ci95_high) if macro_first else (s.ci95_low, s.ci95_high)
        ci = f"{low:.3f}-{high:.3f}" if low is not None else "n/a"
        micro = f"{s.micro_wer:.3f}" if s.micro_wer is not None else "n/a"
        macro = f"{s.macro_wer:.3f}" if s.macro_wer is not None else "n/a"
        if s.hallucination_wpm is not None:
            micro, macro, ci = "", "", f"{s.hallucination_wpm:.1f} words/min"
        lines.append(f"{s.voice or '-':<16} {s.asr or '-':<24} {s.condition or '-':<14} "
                     f"{s.n_utterances:>4} {s.n_excluded:>8} {(macro if macro_first else micro):>9} "
                     f"{(micro if macro_first else macro):>9} {ci:>15}")
    if confident:
        lines.append("most confident comparisons (MAPSSWE, Holm-corrected):")
        lines += [f"  {c.verdict}" for c in confident]
    counts = {f: sum(s.flag_counts.get(f, 0) for s in summary) for f in FLAGS}
    flagged = sum(s.flagged for s in summary)
    named = ", ".join(f"{f} {n}" for f, n in counts.items() if n)
    lines.append(f"{flagged} of {n_utterances} utterances flagged" +
                 (f" ({named}): see the flags column" if flagged else ""))
    if any(s.hallucination_wpm is not None for s in summary):
        lines.append(f"silence rows: words written per minute of audio with no speech (they have no {rate})")
    return "\n".join(lines)


def failures(utterances: list[ScoredUtterance], where: str, shown: int = 5) -> str:
    """How many rows failed, the first few with their reasons, and where the rest are; "" when none did."""
    failed = [u for u in utterances if u.status == Status.ERROR]
    if not failed:
        return ""
    lines = [f"{len(failed)} of {len(utterances)} rows failed, left out of every figure:"]
    lines += [f"  {u.sentence_id} ({', '.join(p for p in (u.voice, u.condition, u.asr) if p)}): {u.error}"
              for u in failed[:shown]]
    if len(failed) > shown:
        lines.append(f"  … and {len(failed) - shown} more")
    lines.append(f"  every failed row: {where} (status error; the error column says why)")
    return "\n".join(lines)
