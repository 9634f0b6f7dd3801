"""report.html: one self-contained page (plots embedded, audio linked relative to the page)."""
from __future__ import annotations

import base64
import html
import json
import os
from pathlib import Path

from pipeline.records import ErrorEvent, GroupSummary, ScoredUtterance
from pipeline.scoring.align import from_events
from pipeline.scoring.flags import NAMES as FLAGS

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}
th{background:#f0f0f0;cursor:pointer}.S{background:#ffe08a}.D{background:#ff9c9c;text-decoration:line-through}
.I{background:#9cd3ff}.bad{color:#a00}img{max-width:100%;margin:.5em 0}.plots{display:flex;flex-wrap:wrap;gap:1em}
code{font-size:12px}audio{height:28px;width:220px}
"""
SCRIPT = """
function sortBy(th){const t=th.closest('table'),i=[...th.parentNode.children].indexOf(th),
b=t.tBodies[0],rows=[...b.rows],asc=th.dataset.asc!=='1';th.dataset.asc=asc?'1':'0';
rows.sort((x,y)=>{const a=x.cells[i].dataset.v??x.cells[i].innerText,c=y.cells[i].dataset.v??y.cells[i].innerText;
const na=parseFloat(a),nc=parseFloat(c);const r=(!isNaN(na)&&!isNaN(nc))?na-nc:a.localeCompare(c);return asc?r:-r});
rows.forEach(r=>b.appendChild(r))}
function filterRows(){const errs=document.getElementById('only-errors').checked,
flag=document.getElementById('only-flag').value;document.querySelectorAll('#utts tbody tr').forEach(r=>{
const hide=(errs&&r.dataset.errors==='0')||(flag==='any'&&!r.dataset.flags)||
(flag&&flag!=='any'&&!r.dataset.flags.split(';').includes(flag));r.style.display=hide?'none':''})}
"""


def _img(png: bytes | None, alt: str) -> str:
    if not png:
        return ""
    return f'<img alt="{alt}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def coloured(ops: list[tuple[str, str | None, str | None]]) -> tuple[str, str]:
    """Reference and hypothesis as HTML with substitutions, deletions and insertions marked."""
    r_out, h_out = [], []
    for op, r, h in ops:
        if op == "H":
            r_out.append(html.escape(r))
            h_out.append(html.escape(h))
        elif op == "S":
            r_out.append(f'<span class="S">{html.escape(r)}</span>')
            h_out.append(f'<span class="S">{html.escape(h)}</span>')
        elif op == "D":
            r_out.append(f'<span class="D">{html.escape(r)}</span>')
        else:
            h_out.append(f'<span class="I">{html.escape(h)}</span>')
    return " ".join(r_out), " ".join(h_out)


def _cell(x) -> str:
    return "" if x is None else str(x)


def render(title: str, summary: list[GroupSummary], utterances: list[ScoredUtterance], events: list[ErrorEvent],
           plots: dict[str, bytes | None], config: dict, versions: dict, links: dict[str, str], page_dir: Path) -> str:
    head = ["voice", "asr", "condition", "n_utterances", "n_excluded", "micro_wer", "macro_wer", "ci95_low",
            "ci95_high", "spearman_rho", "spearman_p", "spearman_n", "flagged", "hallucination_wpm"]
    summary_rows = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(getattr(s, h)))}</td>" for h in head) + "</tr>"
                           for s in summary)
    by_utterance: dict[str, list[ErrorEvent]] = {}
    for e in events:
        by_utterance.setdefault(e.id, []).append(e)
    body = []
    for u in utterances:
        audio = ""
        if u.audio_path and Path(u.audio_path).exists():
            rel = os.path.relpath(Path(u.audio_path).resolve(), page_dir.resolve())
            audio = f'<audio controls preload="none" src="{html.escape(Path(rel).as_posix())}"></audio>'
        if u.status in ("ok", "empty_reference"):
            ref, hyp = coloured(from_events(u.reference_normalized, u.hypothesis_normalized,
                                            by_utterance.get(u.id, [])))
        else:
            ref, hyp = html.escape(u.reference), f'<span class="bad">{html.escape(u.error)}</span>'
        wer, ppl = _cell(u.wer), _cell(u.perplexity)
        body.append(
            f'<tr data-errors="{0 if u.errors == 0 else 1}" data-flags="{html.escape(u.flags)}">'
            f'<td>{html.escape(u.id)}</td>'
            f'<td>{html.escape(u.voice)}</td><td>{html.escape(u.asr)}</td><td>{html.escape(u.condition)}</td>'
            f'<td>{audio}</td><td>{ref}</td><td>{hyp}</td><td data-v="{wer}">{wer}</td>'
            f'<td data-v="{ppl}">{ppl}</td><td>{html.escape(u.status)}</td>'
            f'<td class="bad">{html.escape(u.flags.replace(";", " "))}</td></tr>')
    link_html = " · ".join(f'<a href="{html.escape(href)}">{html.escape(name)}</a>' for name, href in links.items())
    cols = ["id", "voice", "asr", "condition", "audio", "reference", "hypothesis", "WER", "perplexity", "status",
            "flags"]
    flag_options = "".join(f'<option value="{f}">{f}</option>' for f in FLAGS)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<link rel="icon" href="data:,"><style>{STYLE}</style></head><body>
<h1>{html.escape(title)}</h1>
<p>Files: {link_html}</p>
<h2>Corpus figures</h2>
<p>micro WER = Σ errors / Σ reference words (as sclite); macro WER = mean of per-sentence WER. CI: bootstrap
95% over sentences. Spearman: perplexity vs WER. Normalizer: <code>{html.escape(config.get("score", {}).get("normalize", ""))}</code>.</p>
<table><thead><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr></thead><tbody>{summary_rows}</tbody></table>
<div class="plots">{"".join(_img(png, name) for name, png in plots.items())}</div>
<h2>Sentences</h2>
<p><label><input type="checkbox" id="only-errors" onchange="filterRows()"> only sentences with
errors</label> · <label>flags <select id="only-flag" onchange="filterRows()"><option value="">all rows</option>
<option value="any">any flag</option>{flag_options}</select></label> · click a header to sort ·
<span class="S">substitution</span> <span class="D">deletion</span>
<span class="I">insertion</span></p>
<table id="utts"><thead><tr>{"".join(f'<th onclick="sortBy(this)">{c}</th>' for c in cols)}</tr></thead>
<tbody>{"".join(body)}</tbody></table>
<h2>Config and versions</h2>
<pre>{html.escape(json.dumps({"config": config, "versions": versions}, indent=2))}</pre>
<script>{SCRIPT}</script>
</body></html>
"""
