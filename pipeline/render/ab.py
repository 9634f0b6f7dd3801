"""ab.html: two runs side by side, to hear a regression: the verdicts, then every paired sentence from the one
that got most worse to the one that got most better, with both alignments and both audio players."""
from __future__ import annotations

import html
from pathlib import Path

from pipeline.render.html import SCRIPT, STYLE, _cell, coloured, player, table

SHOWN = 300  # sentences on the page; the CSV has every comparison


def render(name_a: str, name_b: str, rows: list, changes: list[dict], unmatched: list[dict], page_dir: Path) -> str:
    worse = [r for r in rows if r.worse]
    gate = (f'<p class="bad">B is worse in {len(worse)} metric{"s" * (len(worse) != 1)}.</p>' if worse
            else "<p>B is not significantly worse than A beyond the margins in any metric.</p>")
    body = []
    for c in changes[:SHOWN]:
        a, b = c["a"], c["b"]
        ref_a, hyp_a = coloured(c["ops_a"])
        _, hyp_b = coloured(c["ops_b"])
        delta = (b.wer or 0) - (a.wer or 0)
        tone = "worse" if delta > 0 else "better" if delta < 0 else ""
        body.append(f'<tr class="{tone}"><td>{html.escape(c["group"])}</td><td>{html.escape(c["sentence_id"])}</td>'
                    f'<td data-v="{delta!r}">{delta:+.3f}</td><td>{ref_a}</td>'
                    f'<td>{player(a.audio_path, page_dir)}<br>{hyp_a}<br>WER {_cell(a.wer)}</td>'
                    f'<td>{player(b.audio_path, page_dir)}<br>{hyp_b}<br>WER {_cell(b.wer)}</td></tr>')
    missing = "".join(f"<li>{html.escape(u['group'])}: {html.escape(u['sentence_id'])}: {html.escape(u['reason'])}"
                      "</li>" for u in unmatched[:SHOWN])
    heads = "".join(f'<th onclick="sortBy(this)">{h}</th>' for h in
                    ("group", "sentence", "ΔWER", "reference", f"A: {html.escape(name_a)}",
                     f"B: {html.escape(name_b)}"))
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
<table id="ab"><thead><tr>{heads}</tr></thead><tbody>{"".join(body)}</tbody></table>
<h2>Not paired ({len(unmatched)})</h2><ul>{missing}</ul>
<script>{SCRIPT}</script>
</body></html>
"""
