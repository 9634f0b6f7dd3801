"""ab.html: two runs side by side, to hear a regression: the verdicts, then every paired sentence from the one
that got most worse to the one that got most better, with both alignments and both audio players."""
from __future__ import annotations

import html
from pathlib import Path

from pipeline.core.records import RunComparison, Unmatched
from pipeline.render.html import SCRIPT, STYLE, Cell, _cell, coloured, player, table
from pipeline.scoring.runs import Change

SHOWN = 300  # sentences on the page; the CSV has every comparison


def render(name_a: str, name_b: str, rows: list[RunComparison], changes: list[Change], unmatched: list[Unmatched],
           page_dir: Path) -> str:
    worse = [r for r in rows if r.worse]
    gate = (f'<p class="bad">B is worse in {len(worse)} metric{"s" * (len(worse) != 1)}.</p>' if worse
            else "<p>B is not significantly worse than A beyond the margins in any metric.</p>")
    def heard(u, alignment) -> str:
        return f"{player(u.audio_path, page_dir)}<br>{coloured(alignment.ops)[1]}<br>WER {_cell(u.wer)}"

    def tone(c: Change) -> str:
        return f' class="{"worse" if c.delta_wer > 0 else "better" if c.delta_wer < 0 else ""}"'

    sentences = table(changes[:SHOWN], ["group", "sentence", "delta", "reference", "a", "b"],
                      {"sentence": lambda c: html.escape(c.a.sentence_id),
                       "delta": lambda c: Cell(f'<td data-v="{c.delta_wer!r}">{c.delta_wer:+.3f}</td>'),
                       "reference": lambda c: coloured(c.alignment_a.ops)[0],
                       "a": lambda c: heard(c.a, c.alignment_a), "b": lambda c: heard(c.b, c.alignment_b)},
                      {"delta": "ΔWER", "a": f"A: {name_a}", "b": f"B: {name_b}"}, row=tone, name="ab")
    missing = "".join(f"<li>{html.escape(u.group)}: {html.escape(u.sentence_id)}: {html.escape(u.reason)}</li>"
                      for u in unmatched[:SHOWN])
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(name_b)} against {html.escape(name_a)}</title>
<link rel="icon" href="data:,"><style>{STYLE}</style></head><body>
<h1>{html.escape(name_b)} (B) against {html.escape(name_a)} (A)</h1>
{gate}
<h2>Verdicts</h2>
<p>Δ = B − A on the sentences both runs scored, with a paired-bootstrap 95% CI over sentences; p Holm-corrected
over every comparison. Every figure: <a href="run_comparison.csv">run_comparison.csv</a>.</p>
{table(rows, ["group", "voice_a", "voice_b", "metric", "sentences", "a", "b", "delta", "p_holm", "verdict"])}
<h2>Sentences, most worse first</h2>
<p>Each sentence's alignment in both runs, and both recordings. <span class="S">substitution</span>
<span class="D">deletion</span> <span class="I">insertion</span>; click a header to sort.</p>
{sentences}
<h2>Not paired ({len(unmatched)})</h2><ul>{missing}</ul>
<script>{SCRIPT}</script>
</body></html>
"""
