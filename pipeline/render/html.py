"""report.html: one self-contained page (plots embedded, audio linked relative to the page)."""
from __future__ import annotations

import base64
import html
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import quote

import numpy as np

from pipeline.core.records import label

from pipeline.scoring.align import Op

from pipeline.scoring.comparisons import Comparison

from pipeline.scoring.evaluate import ScoredUtterance
from pipeline.measures.base import Described
from pipeline.scoring.align import Ops
from pipeline.scoring.evaluate import Results, ScoreConfig
from pipeline.scoring.flags import NAMES as FLAGS
from pipeline.scoring.statistics import Statistics

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}
th{background:#f0f0f0;cursor:pointer}.S{background:#ffe08a}.D{background:#ff9c9c;text-decoration:line-through}
.I{background:#9cd3ff}.bad{color:#a00}.worse{background:#f4b6b6}.better{background:#b9e6b9}
.matrix td{text-align:right;font-family:monospace}.wide{overflow-x:auto;max-width:100%}img{max-width:100%;margin:.5em 0}.plots{display:flex;flex-wrap:wrap;gap:1em}
code{font-size:12px}audio{height:28px;width:220px}figure{margin:0}figcaption{font-size:11px;color:#555}.heads{display:flex;gap:.6em;overflow-x:auto}
"""
SCRIPT = """
function sortBy(th){const t=th.closest('table'),i=[...th.parentNode.children].indexOf(th),
b=t.tBodies[0],rows=[...b.rows],asc=th.dataset.asc!=='1';th.dataset.asc=asc?'1':'0';
rows.sort((x,y)=>{const a=x.cells[i].dataset.v??x.cells[i].innerText,c=y.cells[i].dataset.v??y.cells[i].innerText;
const na=parseFloat(a),nc=parseFloat(c);const r=(!isNaN(na)&&!isNaN(nc))?na-nc:a.localeCompare(c);return asc?r:-r});
rows.forEach(r=>b.appendChild(r))}
function drawAttention(id){const all=JSON.parse(document.getElementById('attention-data').textContent),
d=all[id];if(!d)return;const box=document.getElementById('attention'),t=d.tokens,n=t.length,
cell=Math.max(4,Math.min(14,Math.floor(150/n))),pad=8+6*Math.max(...t.map(x=>x.length)),size=pad+n*cell;
document.getElementById('attention-title').textContent=id+': '+t.join(' ');box.innerHTML='';
d.w.forEach((layer,l)=>{const row=document.createElement('div');row.className='heads';
[...layer,null].forEach((head,h)=>{const rows=head||layer[0].map((r,i)=>r.map((_,j)=>
layer.reduce((s,x)=>s+x[i][j],0)/layer.length));const fig=document.createElement('figure'),
c=document.createElement('canvas');c.width=size;c.height=size;const g=c.getContext('2d');g.font='10px monospace';
for(let i=0;i<n;i++)for(let j=0;j<n;j++){const x=pad+j*cell,y=pad+i*cell;if(j>i){g.fillStyle='#eee';
g.fillRect(x,y,cell,cell);g.strokeStyle='#ccc';g.beginPath();g.moveTo(x,y+cell);g.lineTo(x+cell,y);g.stroke()}
else{const v=Math.sqrt(rows[i][j]);g.fillStyle=`rgb(${255-200*v},${255-150*v},255)`;g.fillRect(x,y,cell,cell)}}
g.fillStyle='#222';g.textAlign='right';g.textBaseline='middle';
t.forEach((s,i)=>{g.fillText(s,pad-3,pad+i*cell+cell/2);g.save();g.translate(pad+i*cell+cell/2,pad-3);
g.rotate(-Math.PI/2);g.textAlign='left';g.fillText(s,0,0);g.restore()});const cap=document.createElement('figcaption');
cap.textContent=head?`layer ${l+1}, head ${h+1}`:`layer ${l+1}, mean over heads`;fig.append(c,cap);row.append(fig)});
box.append(row)})}
function playAudio(){const el=document.getElementById('audio-data');if(!el)return;const all=JSON.parse(el.textContent);
document.querySelectorAll('audio[data-audio]').forEach(a=>{a.src='data:audio/flac;base64,'+all[a.dataset.audio]})}
playAudio();
function filterRows(){const errs=document.getElementById('only-errors').checked,
flag=document.getElementById('only-flag').value;document.querySelectorAll('#utts tbody tr').forEach(r=>{
const hide=(errs&&r.dataset.errors==='0')||(flag==='any'&&!r.dataset.flags)||
(flag&&flag!=='any'&&!r.dataset.flags.split(';').includes(flag));r.style.display=hide?'none':''})}
"""


def _img(png: bytes | None, alt: str) -> str:
    if not png:
        return ""
    return f'<img alt="{alt}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def coloured(ops: Ops) -> tuple[str, str]:
    """Reference and hypothesis as HTML with substitutions, deletions and insertions marked."""
    r_out, h_out = [], []
    for op, r, h in ops:
        if op == Op.HIT:
            r_out.append(html.escape(r))
            h_out.append(html.escape(h))
        elif op == Op.SUBSTITUTION:
            r_out.append(f'<span class="S">{html.escape(r)}</span>')
            h_out.append(f'<span class="S">{html.escape(h)}</span>')
        elif op == Op.DELETION:
            r_out.append(f'<span class="D">{html.escape(r)}</span>')
        else:
            h_out.append(f'<span class="I">{html.escape(h)}</span>')
    return " ".join(r_out), " ".join(h_out)


def _cell(x) -> str:
    """A value as a reader reads it: 3 significant digits (the CSVs keep every digit), a group by its names."""
    if x is None:
        return ""
    if isinstance(x, tuple):
        return label(x)
    if isinstance(x, float):
        return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"
    return str(x)


class Cell(str):
    """A cell's whole `<td>`, for a `table()` column whose cell sorts by a value of its own."""


def _td(x) -> Cell:
    """A cell that sorts by its full value."""
    if isinstance(x, float):
        return Cell(f'<td data-v="{x!r}">{html.escape(_cell(x))}</td>')
    return Cell(f"<td>{html.escape(_cell(x))}</td>")


def table(rows: list, columns: list[str], cells: dict | None = None, heads: dict | None = None,
          row: Callable[[object], str] | None = None, name: str = "") -> str:
    """An HTML table of records; `cells` maps a column to a function that renders that cell (its HTML, or a value
    rendered as the other cells are), `heads` a column to its header, `row` a record to its row's attributes;
    `name`: the table's id."""
    cells, heads = cells or {}, heads or {}

    def td(r, c) -> str:
        if c not in cells:
            return _td(getattr(r, c))
        value = cells[c](r)
        return value if isinstance(value, Cell) else f"<td>{value}</td>"

    body = "".join(f"<tr{row(r) if row else ''}>" + "".join(td(r, c) for c in columns) + "</tr>" for r in rows)
    head = "".join(f"<th onclick=sortBy(this)>{html.escape(heads.get(c, c))}</th>" for c in columns)
    named = f' id="{name}"' if name else ""
    return f'<div class="wide"><table{named}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _interval(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return ""
    return f"{_cell(value)} [{_cell(low)}, {_cell(high)}]" if low is not None else _cell(value)


EMBED_LIMIT = 64 << 20  # bytes of FLAC a page carries; a bigger run's page links its audio files


def embedded_audio(paths: list[str], folder: Path, limit: int = EMBED_LIMIT) -> dict[str, tuple[str, str]] | None:
    """Each readable audio file a page plays (a path relative to the page's folder, or absolute), as lossless
    FLAC in base64, so that the page plays wherever it is copied; None when that would pass `limit` bytes, and
    the page links the files instead."""
    import soundfile as sf

    from pipeline.io import audio

    carried, total = {}, 0
    for path in dict.fromkeys(p for p in paths if p):
        try:
            samples, sr = audio.read(folder / path)
        except audio.BadAudio:
            continue
        buf = io.BytesIO()
        sf.write(buf, np.clip(samples, -1.0, 1.0), sr, format="FLAC", subtype="PCM_16")
        total += buf.tell()
        if total > limit:
            return None
        carried[path] = (f"a{len(carried)}", base64.b64encode(buf.getvalue()).decode())
    return carried


AUDIO_NOTE = " Every player's audio is in this page (FLAC, lossless), so the page plays wherever it is copied."


def corpus_table(summary: list, with_lm: bool = True, macro_first: bool = False) -> str:
    """The group figures, one row per group, in as many columns as fit a page."""
    rates = ["macro_wer", "wer"] if macro_first else ["wer", "macro_wer"]
    columns = ["voice", "asr", "condition", "n_utterances", "n_excluded", *rates, "micro_cer",
               *(["spearman"] if with_lm else []), "flagged"]
    cells = {"wer": lambda s: html.escape(_interval(s.micro_wer, s.ci95_low, s.ci95_high)),
             "macro_wer": lambda s: html.escape(_interval(s.macro_wer, s.macro_ci95_low, s.macro_ci95_high)),
             "spearman": lambda s: html.escape(f"{_cell(s.spearman_rho)} (p {_cell(s.spearman_p)}, n {s.spearman_n})"
                                               if s.spearman_rho is not None else f"n {s.spearman_n}")}
    heads = {"n_utterances": "n", "n_excluded": "excluded", "wer": "micro WER [95% CI]", "macro_wer": "macro WER [95% CI]",
             "micro_cer": "micro CER", "spearman": "Spearman ρ (perplexity, WER)"}
    if any(s.hallucination_wpm is not None for s in summary):
        columns.append("hallucination_wpm")
        heads["hallucination_wpm"] = "words/min in silence"
    return table(summary, columns, cells, heads)


def _stars(p: float) -> str:
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def comparison_matrix(comparisons: list[Comparison]) -> str:
    """Rows A, columns B: ΔWER = WER(B) − WER(A), stars by the Holm-corrected MAPSSWE p; hover for the verdict."""
    groups = list(dict.fromkeys([c.a for c in comparisons] + [c.b for c in comparisons]))
    cell = {(c.a, c.b): c for c in comparisons}
    head = "".join(f"<th>{html.escape(label(g))}</th>" for g in groups)
    rows = []
    for a in groups:
        tds = []
        for b in groups:
            c = cell.get((a, b))
            flip = c is None and (b, a) in cell
            c = c or cell.get((b, a))
            if c is None or c.delta_wer is None:
                tds.append("<td></td>")
                continue
            delta = -c.delta_wer if flip else c.delta_wer
            tone = "worse" if delta > 0 and c.mapsswe_p_holm < 0.05 else \
                "better" if delta < 0 and c.mapsswe_p_holm < 0.05 else ""
            tds.append(f'<td class="{tone}" title="{html.escape(c.verdict)}">{delta:+.3f}{_stars(c.mapsswe_p_holm)}</td>')
        rows.append(f"<tr><th>{html.escape(label(a))}</th>{''.join(tds)}</tr>")
    return (f'<div class="wide"><table class="matrix"><thead><tr><th>A \\ B</th>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


FACTOR_TABLES = {"voice": "Voices, within each engine and condition",
                 "asr": "Engines, within each voice and condition",
                 "condition": "Conditions, within each voice and engine"}


def factor_tables(comparisons: list[Comparison]) -> str:
    """One compact table per factor: the pairs that differ in it alone (Holm's family), each within what the two
    groups share."""
    def within(c: Comparison) -> str:
        return html.escape(", ".join(x for x, y in zip(c.a, c.b) if x == y and x) or "-")

    def side(c: Comparison, which: int) -> str:
        return html.escape(next((p[which == 1] or "-" for p in zip(c.a, c.b) if p[0] != p[1]), ""))

    def delta(c: Comparison) -> str:
        tone = "" if c.mapsswe_p_holm >= 0.05 or not c.delta_wer else "worse" if c.delta_wer > 0 else "better"
        text = _interval(c.delta_wer, c.delta_ci95_low, c.delta_ci95_high)
        return f'<span class="{tone}">{html.escape(text)}{_stars(c.mapsswe_p_holm)}</span>'

    out = []
    for factor, title in FACTOR_TABLES.items():
        pairs = [c for c in comparisons if c.differs == factor]
        if pairs:
            out.append(f"<h3>{title} ({len(pairs)} pairs)</h3>")
            out.append(table(pairs, ["within", "a", "b", "sentences", "delta", "mapsswe_p_holm"],
                             {"within": within, "a": lambda c: side(c, 0), "b": lambda c: side(c, 1), "delta": delta},
                             {"within": "within", "a": "A", "b": "B", "delta": "ΔWER = B − A [95% CI]",
                              "mapsswe_p_holm": "MAPSSWE p (Holm)"}))
    return "\n".join(out)


def statistics(stats: Statistics, figures: dict[str, bytes | None]) -> str:
    """The comparisons, the normalizer table, text difficulty, the hardest words and the breakdown SNR."""
    parts = ["<h2>Comparisons</h2>"]
    comparisons = stats.comparisons
    if comparisons:
        one = sum(c.holm_family == "one-factor" for c in comparisons)
        parts.append(f"<p>Each question is a pair of groups that differ in one factor: {one} of the "
                     f"{len(comparisons)} pairs. ΔWER on the sentences both scored, with a paired-bootstrap 95% CI; "
                     "red: B has significantly more errors, green: fewer (MAPSSWE, Holm-corrected over the "
                     f"{one} one-factor pairs: * p &lt; 0.05, ** p &lt; 0.01, *** p &lt; 0.001). "
                     '<a href="comparisons.csv">comparisons.csv</a> has every pair, the sign and Wilcoxon tests, '
                     "ΔCER and the verdicts.</p>")
        parts.append(factor_tables(comparisons))
        parts.append(f"<details><summary>Every pair as a matrix ({len(comparisons)} pairs; cross-factor pairs are "
                     "Holm-corrected among themselves)</summary><p>Cell = WER(column) − WER(row); hover a cell for "
                     f"its verdict.</p>{comparison_matrix(comparisons)}</details>")
    else:
        parts.append("<p>One group only: nothing to compare.</p>")
    parts.append("<h2>Normalizer sensitivity</h2><p>Every group's WER under each normalizer, and the share of the "
                 "unnormalized errors that the normalizer of this run removes. Compare WERs only under the same "
                 "normalizer.</p>")
    effects = stats.normalizers
    rates = list(dict.fromkeys(k for e in effects for k in e.wer))
    parts.append(table(effects, ["voice", "asr", "condition", *rates, "used", "normalization_share"],
                       {k: (lambda e, k=k: html.escape(_cell(e.wer.get(k)))) for k in rates}))
    by_lm = any(b.by in ("perplexity", "surprisal") for b in stats.difficulty)
    parts.append("<h2>Text difficulty</h2><p>" + (
        "WER by perplexity quartile of the run's sentences and by reference length, and the share of words failed "
        "(substituted or deleted) by the decile of their surprisal under the LM" if by_lm else
        "WER by reference length") + ', with bootstrap 95% CIs (<a href="difficulty.csv">difficulty.csv</a>).</p>')
    parts.append(_img(figures.get("difficulty"), "WER by text difficulty"))
    if stats.surprisal:
        parts.append("<h3>Does the ASR fail where the LM was surprised?</h3><p>A word's surprisal is −log₂ p of its "
                     "tokens under the LM that wrote the sentences, given the sentence so far. Spearman ρ: the rank "
                     "correlation of a word's surprisal and its failure; positive when surprising words fail more "
                     '(<a href="surprisal.csv">surprisal.csv</a>).</p>')
        parts.append(table(stats.surprisal, ["voice", "asr", "condition", "words", "failures",
                                                "mean_surprisal_failed", "mean_surprisal_right", "spearman_rho",
                                                "spearman_p"],
                           heads={"mean_surprisal_failed": "bits, failed", "mean_surprisal_right": "bits, right",
                                  "spearman_rho": "ρ", "spearman_p": "p"}))
    words = stats.words
    families = max((w.families_heard for w in words), default=0)
    parts.append("<h2>Hardest words</h2><p>Reference words by failure rate (substituted or deleted), and whom "
                 "they point at. Engines are grouped by the model they run (every Whisper engine is one family): "
                 "an error that every family makes on a voice points at the voice or the text (the text when it "
                 "is so in every voice), one that a single family makes where another heard the word right points "
                 "at that ASR. " + ("Only one ASR family ran, so text and ASR cannot be told apart: add "
                                    "<code>pocketsphinx:en-us</code> to <code>--asr</code>. " if families < 2 else "")
                 + 'All of them: <a href="words.csv">words.csv</a>.</p>')
    if stats.blame:
        parts.append("<h3>Voice, text or ASR?</h3><p>Of the reference words every ASR family heard (a sentence's "
                     "word in one voice and condition), the share failed by every family (the voice or the text) "
                     "and by one family alone (that ASR), with bootstrap 95% CIs over sentences "
                     '(<a href="blame.csv">blame.csv</a>).</p>')
        parts.append(table(stats.blame, ["voice", "condition", "points_at", "words", "failures", "share"],
                           {"share": lambda b: html.escape(_interval(b.rate, b.ci95_low, b.ci95_high))},
                           {"points_at": "points at", "share": "share of words [95% CI]"}))
    parts.append(table(words[:25], ["word", "occurrences", "failures", "failure_rate", "voices", "engines",
                                    "families", "mean_surprisal", "points_at", "utterances"],
                       {"voices": lambda w: f"{w.voices_failed} of {w.voices_heard}",
                        "engines": lambda w: f"{w.engines_failed} of {w.engines_heard}",
                        "families": lambda w: f"{w.families_failed} of {w.families_heard}",
                        "utterances": lambda w: " ".join(
                            f'<a href="#u-{html.escape(i)}" title="{html.escape(i)}">{n}</a>'
                            for n, i in enumerate(w.utterances.split(";")[:10], 1))},
                       {"failure_rate": "failure rate", "voices": "voices failed", "engines": "engines failed",
                        "families": "ASR families failed", "mean_surprisal": "surprisal (bits)",
                        "points_at": "points at"}))
    if stats.agreement:
        parts.append("<p>Engine agreement: the share of sentences whose normalized hypotheses all engines wrote "
                     "alike; across families: the share where every model family wrote one hypothesis in common "
                     "(engines of one family share its blind spots, so only this says the audio was clear).</p>")
        parts.append(table(stats.agreement, ["voice", "condition", "engines", "utterances", "agreement",
                                                "families", "family_agreement"]))
    if stats.breakdown:
        parts.append("<h2>Robustness</h2><p>Breakdown SNR: where WER first reaches twice the clean WER (at least "
                     "0.02), interpolated on the measured curve, with a bootstrap 95% CI over sentences.</p>")
        parts.append(table(stats.breakdown, ["voice", "asr", "clean_wer", "threshold", "breakdown_snr",
                                                "ci95_low", "ci95_high", "curve"],
                           {"curve": lambda b: html.escape(", ".join(f"{p.snr:g} dB: {p.wer:.3g}" for p in b.curve))},
                           {"curve": "WER by SNR"}))
        parts.append(_img(figures.get("snr"), "WER vs SNR"))
    return "\n".join(parts)


ATTENTION_SHOWN = 200  # sentences whose weights the page embeds (about 15 KB each for PA6a's 4 × 4 model)


def player(path: str, page_dir: Path, embedded: dict[str, str] | None = None) -> str:
    """An audio player for a file (a path relative to the page's folder, or absolute): its audio carried in the
    page where `embedded` names it (a key into the page's audio data), else linked relative to the page. The link
    is URL-quoted, since file names made from ids hold %-escapes (core/names.py) that a browser would otherwise
    decode."""
    if embedded and path in embedded:
        return f'<audio controls preload="none" data-audio="{embedded[path]}"></audio>'
    if not path or not (page_dir / path).exists():
        return ""
    rel = Path(os.path.relpath((page_dir / path).resolve(), page_dir.resolve())).as_posix()
    return f'<audio controls preload="none" src="{html.escape(quote(rel))}"></audio>'


def _similarity_cell(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return "<td></td>"
    shade = int(255 - 155 * max(0.0, min(1.0, value)))
    return (f'<td style="background:rgb({shade},{shade},255)" title="95% CI [{_cell(low)}, {_cell(high)}]">'
            f"{_cell(value)}</td>")


def voices_matrix(voices: list) -> str:
    """Per condition, every two voices' similarity (the diagonal: each voice's consistency), shaded."""
    parts = []
    for condition in dict.fromkeys(v.condition for v in voices):
        rows = [v for v in voices if v.condition == condition]
        names = list(dict.fromkeys(n for v in rows for n in (v.voice_a, v.voice_b)))
        cell = {**{(v.voice_a, v.voice_b): v for v in rows}, **{(v.voice_b, v.voice_a): v for v in rows}}
        head = "".join(f"<th>{html.escape(n or 'recordings')}</th>" for n in names)
        body = "".join(f'<tr><th scope="row">{html.escape(a or "recordings")}</th>' + "".join(
            _similarity_cell(cell[a, b].similarity, cell[a, b].ci95_low, cell[a, b].ci95_high) if (a, b) in cell
            else "<td></td>" for b in names) + "</tr>" for a in names)
        parts.append(f'<p>{html.escape(condition)}</p><table class="matrix"><tr><td></td>{head}</tr>{body}</table>')
    return "".join(parts)


def measures_section(stats: Statistics, figures: dict[str, bytes | None], declared: dict[str, Described]) -> str:
    """The measures beside WER: each column's figures per group, the comparisons between groups, the voices'
    similarity, and a plot of the distributions. Every declared column appears here with no code of its own."""
    summary = stats.measure_summary
    if not summary:
        return ""
    meanings = "".join(f"<li><code>{html.escape(c)}</code>: {html.escape(m)}</li>"
                       for d in declared.values() for c, m in d.columns.items())
    meanings += "".join(f"<li><b>{html.escape(d.name)}</b> compares with {html.escape(d.comparable)}.</li>"
                        for d in declared.values() if d.comparable)
    cells = {"mean": lambda s: html.escape(_interval(s.mean, s.ci95_low, s.ci95_high)),
             "rho": lambda s: html.escape(f"{_cell(s.spearman_rho_wer)} (p {_cell(s.spearman_p)})"
                                          if s.spearman_rho_wer is not None else "")}
    heads = {"mean": "mean [95% CI]", "rho": "Spearman ρ with WER"}
    parts = ["<h2>Naturalness and voice</h2>",
             f"<ul>{meanings}</ul><p>Per group: the mean with a bootstrap 95% CI over sentences, percentiles, and "
             "the rank correlation with WER. The sentences table below sorts by each column, with each line's "
             "audio beside it.</p>",
             table(summary, ["measure", "voice", "asr", "condition", "n", "mean", "p5", "median", "p95", "rho"],
                   cells, heads),
             _img(figures.get("measures"), "measures")]
    comparisons = [c for c in stats.measure_comparisons if c.holm_family == "one-factor"]
    if comparisons:
        parts.append("<p>Groups that heard different audio on the same sentences: Δ = B − A with a paired-bootstrap "
                     "95% CI, Wilcoxon signed-rank p, Holm-corrected per measure over the one-factor pairs "
                     '(every pair: <a href="measure_comparisons.csv">measure_comparisons.csv</a>).</p>')
        parts.append(table(comparisons, ["measure", "a", "b", "sentences", "delta", "wilcoxon_p_holm", "verdict"],
                           {"delta": lambda c: html.escape(_interval(c.delta, c.delta_ci95_low, c.delta_ci95_high))},
                           {"delta": "Δ [95% CI]", "wilcoxon_p_holm": "p (Holm)"}))
    if stats.voices:
        parts.append("<p>Speaker similarity between voices (Resemblyzer): the mean cosine over utterances of "
                     "different sentences; the diagonal is each voice's consistency. Hover a cell for its CI.</p>")
        parts.append(voices_matrix(stats.voices))
    return "".join(parts)


def attention_section(attention: dict | None) -> str:
    """The LM's causal attention for one sentence at a time: the first, or the one whose row was clicked. The
    weights travel as JSON (each row's visible part, 3 decimals) and are drawn on canvases, a heatmap per layer and
    head and their mean, the masked future hatched."""
    if not attention:
        return ""
    shown = dict(list(attention.items())[:ATTENTION_SHOWN])
    data = {sid: {"tokens": tokens, "w": [[[[round(float(x), 3) for x in row[:i + 1]] + [0] * (len(row) - i - 1)
                                            for i, row in enumerate(head)] for head in layer] for layer in weights]}
            for sid, (tokens, weights) in shown.items()}
    more = (f" The page holds the first {len(shown)} of {len(attention)} sentences; the npz files hold all."
            if len(shown) < len(attention) else "")
    payload = json.dumps(data).replace("</", "<\\/")  # a token "</script>" must not end the script
    return ("<h2>Attention</h2><p>The trained model's causal attention (softmax(QKᵀ/√d<sub>k</sub> + mask)), "
            "row token attending to column token, after the sampling prompt: white 0 to blue 1, on a square-root "
            "scale so that small weights show; the hatched upper triangle is the masked future. One row per "
            "layer: its heads, then their mean. Click a sentence's row below to draw it. The numbers: "
            f'<code>attention/&lt;sentence_id&gt;.npz</code>.{more}</p><p id="attention-title"></p>'
            '<div id="attention"></div>'
            f'<script type="application/json" id="attention-data">{payload}</script>')


@dataclass(frozen=True)
class Page:
    """Everything a report shows."""
    title: str
    scores: Results
    stats: Statistics | None
    score: ScoreConfig  # how the scores were made: the normalizer and the headline WER
    config: dict  # what the run's stages read: its inputs and the config they depend on, printed at the end
    versions: dict
    links: dict[str, str]  # name → href of the run's files
    folder: Path  # where the page is written: audio it does not carry is linked relative to it
    figures: dict[str, bytes | None] = field(default_factory=dict)  # PNGs by name
    attention: dict | None = None  # sentence_id → (tokens, weights)
    measures: dict[str, Described] = field(default_factory=dict)  # each measure of the run, by name
    audio: dict[str, tuple[str, str]] | None = None  # path → (key, base64 FLAC): the audio the page carries
    comparable: str = ""  # what the run's WER is comparable with (config/recipes.py), said at the top


def sentences_table(page: Page, with_lm: bool) -> str:
    """Every utterance with its audio, its alignment coloured, its figures and flags, sortable and filterable."""
    utterances = page.scores.utterances
    embedded = {path: key for path, (key, _) in (page.audio or {}).items()}
    measure_columns = list(dict.fromkeys(c for u in utterances for c in u.measures))
    drawable = set(list(page.attention or {})[:ATTENTION_SHOWN])
    texts = {}
    for u in utterances:
        if u.status in ("ok", "empty_reference"):
            texts[u.id] = coloured(page.scores.alignment(u).ops)
        else:
            texts[u.id] = html.escape(u.reference), f'<span class="bad">{html.escape(u.error)}</span>'

    def attributes(u: ScoredUtterance) -> str:
        click = ' onclick="drawAttention(this.dataset.sentence)"' if u.sentence_id in drawable else ""
        return (f' id="u-{html.escape(u.id)}" data-errors="{0 if u.errors == 0 else 1}" '
                f'data-flags="{html.escape(";".join(u.flags))}" data-sentence="{html.escape(u.sentence_id)}"{click}')

    prompted = any(u.speaker_reference for u in utterances)
    columns = ["id", "voice", "asr", "condition", "audio", *(["speaker_reference"] if prompted else []), "reference",
               "hypothesis", "wer", *(["perplexity"] if with_lm else []), "status", "flags", *measure_columns]
    cells = {"audio": lambda u: player(u.audio_path, page.folder, embedded),
             "speaker_reference": lambda u: player(u.speaker_reference, page.folder, embedded),
             "reference": lambda u: texts[u.id][0], "hypothesis": lambda u: texts[u.id][1],
             "flags": lambda u: f'<span class="bad">{html.escape(" ".join(u.flags))}</span>',
             **{c: (lambda u, c=c: _td(u.measures.get(c))) for c in measure_columns}}
    return table(utterances, columns, cells, {"wer": "WER", "speaker_reference": "speaker reference"},
                 row=attributes, name="utts")


def render(page: Page) -> str:
    """The page. A run without an LM (recordings scored as they are) shows no perplexity and no LM config."""
    scores, stats, figures, score = page.scores, page.stats, page.figures, page.score
    with_lm = any(u.perplexity is not None for u in scores.utterances)
    audio_data = json.dumps({key: data for key, data in (page.audio or {}).values()}).replace("</", "<\\/")
    link_html = " · ".join(f'<a href="{html.escape(href)}">{html.escape(name)}</a>'
                           for name, href in page.links.items())
    flag_options = "".join(f'<option value="{f}">{f}</option>' for f in FLAGS)
    attention = page.attention
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(page.title)}</title>
<link rel="icon" href="data:,"><style>{STYLE}</style></head><body>
<h1>{html.escape(page.title)}</h1>
{f'<p class="comparable"><b>Comparable with:</b> {html.escape(page.comparable)}</p>' if page.comparable else ""}
<p>Files: {link_html}</p>
<h2>Corpus figures</h2>
<p>micro WER = Σ errors / Σ reference words (as sclite); macro WER = mean of per-sentence WER (as seed-tts-eval).
CI: bootstrap 95% over sentences.{" Spearman: perplexity vs WER." if with_lm else ""} Normalizer:
<code>{html.escape(score.normalize)}</code>.{AUDIO_NOTE if page.audio else ""}</p>
{corpus_table(scores.summary, with_lm, score.headline == "macro")}
<div class="plots">{"".join(_img(figures.get(name), name) for name in ("groups", "perplexity", "loss"))}</div>
{statistics(stats, figures) if stats else ""}
{measures_section(stats, figures, page.measures) if stats else ""}
{attention_section(attention)}
<h2>Sentences</h2>
<p><label><input type="checkbox" id="only-errors" onchange="filterRows()"> only sentences with
errors</label> · <label>flags <select id="only-flag" onchange="filterRows()"><option value="">all rows</option>
<option value="any">any flag</option>{flag_options}</select></label> · click a header to sort ·
<span class="S">substitution</span> <span class="D">deletion</span>
<span class="I">insertion</span></p>
{sentences_table(page, with_lm)}
<h2>Config and versions</h2>
<pre>{html.escape(json.dumps({**page.config, "versions": page.versions}, indent=2))}</pre>
{f'<script type="application/json" id="audio-data">{audio_data}</script>' if page.audio else ""}
<script>{SCRIPT}{f"drawAttention({json.dumps(next(iter(attention)))});" if attention else ""}</script>
</body></html>
"""
