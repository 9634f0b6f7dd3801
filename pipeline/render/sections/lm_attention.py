"""The LM's causal attention for one sentence at a time: the first, or the one whose row was clicked. The weights
travel as JSON (each row's visible part, 3 decimals) and are drawn on canvases, a heatmap per layer and head and
their mean, the masked future hatched."""
from __future__ import annotations

import html
import json

from pipeline.render.html import SECTIONS, Page, Section

ATTENTION_SHOWN = 200  # sentences whose weights the page embeds (about 15 KB each for PA6a's 4 × 4 model)


def render(page: Page) -> str:
    return embedded(page.attention)


def embedded(attention: dict | None) -> str:
    """The section for {sentence id: (tokens, weights)}."""
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
            f'<div id="attention" data-first="{html.escape(next(iter(shown)))}"></div>'
            f'<script type="application/json" id="attention-data">{payload}</script>')


SECTIONS.register(Section("attention", 80, (), render))
