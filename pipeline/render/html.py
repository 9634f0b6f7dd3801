"""report.html: one self-contained page (plots and audio carried in it), made of sections, each one file of
pipeline/render/sections/; and the helpers every page shares (tables, cells, alignments, players), which ab.html
uses too."""
from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import os
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Callable
from urllib.parse import quote

import numpy as np

from pipeline.core.records import label
from pipeline.core.registry import Catalog
from pipeline.listen.analysis import Analysis
from pipeline.measures.base import Described
from pipeline.scoring.align import Op, Ops
from pipeline.scoring.config import ScoreConfig
from pipeline.scoring.utterances import Results
from pipeline.statistics import Statistics

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}
th{background:#f0f0f0;cursor:pointer}.S{background:#ffe08a}.D{background:#ff9c9c;text-decoration:line-through}
.I{background:#9cd3ff}.bad{color:#a00}.worse{background:#f4b6b6}.better{background:#b9e6b9}
.matrix td{text-align:right;font-family:monospace}.wide{overflow-x:auto;max-width:100%}img{max-width:100%;margin:.5em 0}.plots{display:flex;flex-wrap:wrap;gap:1em}
code{font-size:12px}audio{height:28px;width:220px}figure{margin:0}figcaption{font-size:11px;color:#555}.heads{display:flex;gap:.6em;overflow-x:auto}
"""
SCRIPT = (files("pipeline.render") / "static" / "report.js").read_text(encoding="utf-8")


def _pinned(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


# as strict as the listening app's: the page's own script and style, pinned by their hashes (the page is one file,
# so they travel in it), its figures and audio as data, and audio files beside it; nothing else, nothing inline
CSP = (f"default-src 'none'; script-src {_pinned(SCRIPT)}; style-src {_pinned(STYLE)}; img-src data:; "
       "media-src 'self' data: file:; base-uri 'none'; form-action 'none'")


def document(title: str, body: str, carried: dict[str, tuple[str, str]] | None = None) -> str:
    """Every page this tool writes (report.html, ab.html, results.html): its title, its body, the audio it carries
    (path → key, base64 FLAC) and the one script, under CSP."""
    data = json.dumps({key: flac for key, flac in carried.values()}).replace("</", "<\\/") if carried else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<title>{html.escape(title)}</title>
<link rel="icon" href="data:,"><style>{STYLE}</style></head><body>
{body}
{f'<script type="application/json" id="audio-data">{data}</script>' if data else ""}
<script>{SCRIPT}</script>
</body></html>
"""


def image(png: bytes | None, alt: str) -> str:
    if not png:
        return ""
    return f'<img alt="{alt}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def coloured(ops: Ops) -> tuple[str, str]:
    """Reference and hypothesis as HTML with substitutions, deletions and insertions marked."""
    r_out, h_out = [], []
    for op, r, h in ops:
        if op == Op.HIT:  # sclite -D's optional word has nothing across
            r_out += [html.escape(r)] if r is not None else []
            h_out += [html.escape(h)] if h is not None else []
        elif op == Op.SUBSTITUTION:
            r_out.append(f'<span class="S">{html.escape(r)}</span>')
            h_out.append(f'<span class="S">{html.escape(h)}</span>')
        elif op == Op.DELETION:
            r_out.append(f'<span class="D">{html.escape(r)}</span>')
        else:
            h_out.append(f'<span class="I">{html.escape(h)}</span>')
    return " ".join(r_out), " ".join(h_out)


def readable(x) -> str:
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


def sortable(x) -> Cell:
    """A cell that sorts by its full value."""
    if isinstance(x, float):
        return Cell(f'<td data-v="{x!r}">{html.escape(readable(x))}</td>')
    return Cell(f"<td>{html.escape(readable(x))}</td>")


def table(rows: list, columns: list[str], cells: dict | None = None, heads: dict | None = None,
          row: Callable[[object], str] | None = None, name: str = "") -> str:
    """An HTML table of records; `cells` maps a column to a function that renders that cell (its HTML, or a value
    rendered as the other cells are), `heads` a column to its header, `row` a record to its row's attributes;
    `name`: the table's id."""
    cells, heads = cells or {}, heads or {}

    def td(r, c) -> str:
        if c not in cells:
            return sortable(getattr(r, c))
        value = cells[c](r)
        return value if isinstance(value, Cell) else f"<td>{value}</td>"

    body = "".join(f"<tr{row(r) if row else ''}>" + "".join(td(r, c) for c in columns) + "</tr>" for r in rows)
    head = "".join(f"<th>{html.escape(heads.get(c, c))}</th>" for c in columns)
    named = f' id="{name}"' if name else ""
    return f'<div class="wide"><table{named}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def with_ci(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return ""
    return f"{readable(value)} [{readable(low)}, {readable(high)}]" if low is not None else readable(value)


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


@dataclass(frozen=True)
class Page:
    """Everything a report shows."""
    title: str
    scores: Results
    stats: Statistics
    score: ScoreConfig  # how the scores were made: the normalizer and the headline WER
    config: dict  # what the run's stages read: its inputs and the config they depend on, printed at the end
    versions: dict
    links: dict[str, str]  # name → href of the run's files
    folder: Path  # where the page is written: audio it does not carry is linked relative to it
    loss_log: Path | None = None  # the LM's training loss, where the run has an LM
    attention: dict | None = None  # sentence_id → (tokens, weights)
    measures: dict[str, Described] = field(default_factory=dict)  # each measure of the run, by name
    audio: dict[str, tuple[str, str]] | None = None  # path → (key, base64 FLAC): the audio the page carries
    comparable: str = ""  # what the run's WER is comparable with (config/recipes.py), said at the top
    listening: Analysis | None = None  # what the run's listening test found so far, if it has one
    # the runs of the command in several languages this run is one of (cli/several.py): language → run name
    languages: dict[str, str] = field(default_factory=dict)
    languages_table: str = ""  # href of their table of rates, written when the last of them ends

    @property
    def with_lm(self) -> bool:
        """A run without an LM (recordings scored as they are) shows no perplexity."""
        return any(u.perplexity is not None for u in self.scores.utterances)


@dataclass(frozen=True)
class Section:
    """A part of the report: one file in pipeline/render/sections/ (or a plugin's) that registers it."""
    name: str
    order: int  # where on the page: lower first
    reads: tuple[str, ...]  # the tables of the run it shows: fields of the scores or of the statistics
    render: Callable[[Page], str]  # its HTML ("" to show nothing for this run)


SECTIONS = Catalog("pipeline.render.sections", "speech_eval.sections", "report section", skip=())


def render(page: Page) -> str:
    """The page: its header, then every section in order."""
    link_html = " · ".join(f'<a href="{html.escape(href)}">{html.escape(name)}</a>'
                           for name, href in page.links.items())
    sections = "\n".join(part for part in (s.render(page) for s in sorted(SECTIONS.all(), key=lambda s: s.order))
                          if part)
    return document(page.title, f"""<h1>{html.escape(page.title)}</h1>
{f'<p class="comparable"><b>Comparable with:</b> {html.escape(page.comparable)}</p>' if page.comparable else ""}
<p>Files: {link_html}</p>
{sections}""", page.audio)
