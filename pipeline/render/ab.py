"""ab.html: two runs side by side, to hear a regression: the verdicts, then every paired sentence from the one
that got most worse to the one that got most better, with both alignments, every gated metric of both, and both
recordings beside the speaker reference they should sound like. The page carries its audio as report.html does,
so the folder uploaded from CI plays on its own."""
from __future__ import annotations

import html
import math
from pathlib import Path

from pipeline.core.records import label

from pipeline.scoring.utterances import ScoredUtterance

from pipeline.render.html import AUDIO_NOTE, Cell, coloured, document, embedded_audio, player, readable, table
from pipeline.gate.release import Change, Human, RunComparison, Unmatched
from pipeline.gate.sealed import Run

SHOWN = 300  # sentences on the page; the CSV has every comparison
SILENT = (" A sentence with nothing to say (no reference word) has no WER: its Δ is the words B wrote there less"
          " those A wrote, every one an insertion, and it sorts beyond every ΔWER.")


def render(a: Run, b: Run, rows: list[RunComparison], changes: list[Change], unmatched: list[Unmatched],
           page_dir: Path, human: Human | None = None) -> str:
    shown = changes[:SHOWN]
    metrics = list(dict.fromkeys(r.metric for r in rows))
    has_prompt = any(c.a.speaker_reference or c.b.speaker_reference for c in shown)

    def audio(run: Run, u: ScoredUtterance) -> str:
        return run.audio(u.audio_path)

    def prompt(c: Change) -> str:
        return a.audio(c.a.speaker_reference) if c.a.speaker_reference else b.audio(c.b.speaker_reference)

    paths = [p for c in shown for p in (audio(a, c.a), audio(b, c.b), *([prompt(c)] if has_prompt else []))]
    carried = embedded_audio(paths, page_dir)
    embedded = {path: key for path, (key, _) in (carried or {}).items()}

    def listeners(c: Change, side: str) -> float | None:
        """The listeners of this sentence: each run's mean vote, or (a pair test) the mean preference for B, shown
        on B's side."""
        if human.votes:
            prefs = [v for _, s, v in human.preferences(a, c.a.voice, b, c.b.voice, c.a.condition)
                     if s == c.a.sentence_id]
            return round(sum(prefs) / len(prefs), 3) if prefs and side == "b" else None
        run, u = (a, c.a) if side == "a" else (b, c.b)
        return human.of(run, u.voice, u.condition).get(u.sentence_id)

    def value(c: Change, side: str, metric: str) -> float | None:
        if human and metric == human.metric:
            return listeners(c, side)
        u = c.a if side == "a" else c.b
        return u.wer if metric in ("wer", "macro_wer") else u.cer if metric == "cer" else u.measures.get(metric)

    def heard(c: Change, side: str) -> str:
        run, u, alignment = (a, c.a, c.alignment_a) if side == "a" else (b, c.b, c.alignment_b)
        figures = " · ".join(f"{html.escape(m)} {readable(value(c, side, m))}" for m in metrics)
        return f"{player(audio(run, u), page_dir, embedded)}<br>{coloured(alignment.ops)[1]}<br>{figures}"

    def tone(c: Change) -> str:
        return f' class="{"worse" if c.worse_by > 0 else "better" if c.worse_by < 0 else ""}"'

    def delta(c: Change) -> Cell:
        """ΔWER; where there is nothing to say, the words B wrote less those A wrote, sorted beyond every ΔWER."""
        if c.delta_wer is not None:
            return Cell(f'<td data-v="{c.delta_wer!r}">{c.delta_wer:+.3f}</td>')
        order = {math.inf: "Infinity", -math.inf: "-Infinity"}.get(c.worse_by, "0")
        return Cell(f'<td data-v="{order}" title="no reference word: each word written is an insertion">'
                    f'{c.delta_errors:+d} word{"s" * (abs(c.delta_errors) != 1)}</td>')

    columns = ["asr_condition", "sentence", "delta", "reference", *(["prompt"] if has_prompt else []), "a", "b"]
    sentences = table(shown, columns,
                      {"sentence": lambda c: html.escape(c.a.sentence_id),
                       "delta": delta,
                       "reference": lambda c: coloured(c.alignment_a.ops)[0],
                       "prompt": lambda c: player(prompt(c), page_dir, embedded),
                       "a": lambda c: heard(c, "a"), "b": lambda c: heard(c, "b")},
                      {"delta": "ΔWER", "prompt": "speaker reference", "a": f"A: {a.name}", "b": f"B: {b.name}"},
                      row=tone, name="ab")
    worse = [r for r in rows if r.worse]
    gate = (f'<p class="bad">B is worse in {len(worse)} metric{"s" * (len(worse) != 1)}.</p>' if worse
            else "<p>B is not significantly worse than A beyond the margins in any metric.</p>")
    notes = "".join(f"<li><b>{html.escape(d.name)}</b> compares with {html.escape(d.comparable)}.</li>"
                    for d in a.measures.values() if d.comparable and any(m in d.columns for m in metrics))
    missing = "".join(f"<li>{html.escape(label(u.asr_condition))}: {html.escape(u.sentence_id)}: "
                      f"{html.escape(u.reason)}</li>" for u in unmatched[:SHOWN])
    return document(f"{b.name} against {a.name}", f"""
<h1>{html.escape(b.name)} (B) against {html.escape(a.name)} (A)</h1>
{gate}
<h2>Verdicts</h2>
<p>Δ = B − A on the sentences both runs scored, with a paired-bootstrap 95% CI over sentences; p Holm-corrected
over every comparison. Where no difference was found: the smallest |Δ| these sentences could detect, and the
sentences it would take to detect the Δ seen. Every figure: <a href="run_comparison.csv">run_comparison.csv</a>.</p>
{f"<ul>{notes}</ul>" if notes else ""}
{table(rows, ["asr_condition", "voice_a", "voice_b", "metric", "sentences", "a", "b", "delta", "p_holm", "verdict"])}
<h2>Sentences, most worse first</h2>
<p>Each sentence's alignment in both runs, every gated metric of both, and both recordings
{"beside the speaker reference they should sound like" if has_prompt else ""}.{AUDIO_NOTE if carried else ""}
<span class="S">substitution</span> <span class="D">deletion</span> <span class="I">insertion</span>; click a header
to sort.{SILENT if any(c.delta_wer is None for c in shown) else ""}</p>
{sentences}
<h2>Not paired ({len(unmatched)})</h2><ul>{missing}</ul>""", carried)

