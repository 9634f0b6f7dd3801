"""The hardest words and whom they point at (the voice, the text or an ASR family), blame per voice and condition,
and the engines' agreement."""
from __future__ import annotations

import html

from pipeline.render.html import SECTIONS, Page, Section, with_ci, table


def render(page: Page) -> str:
    stats = page.stats
    words = stats["words"]
    families = max((w.families_heard for w in words), default=0)
    parts = ["<h2>Hardest words</h2><p>Reference words by failure rate (substituted or deleted), and whom "
             "they point at. Engines are grouped by the model they run (every Whisper engine is one family): "
             "an error that every family makes on a voice points at the voice or the text (the text when it "
             "is so in every voice), one that a single family makes where another heard the word right points "
             "at that ASR. " + ("Only one ASR family ran, so text and ASR cannot be told apart: add "
                                "<code>pocketsphinx:en-us</code> to <code>--asr</code>. " if families < 2 else "")
             + 'All of them: <a href="words.csv">words.csv</a>.</p>']
    if stats["blame"]:
        parts.append("<h3>Voice, text or ASR?</h3><p>Of the reference words every ASR family heard (a sentence's "
                     "word in one voice and condition), the share failed by every family (the voice or the text) "
                     "and by one family alone (that ASR), with bootstrap 95% CIs over sentences "
                     '(<a href="blame.csv">blame.csv</a>).</p>')
        parts.append(table(stats["blame"], ["voice", "condition", "points_at", "words", "failures", "share"],
                           {"share": lambda b: html.escape(with_ci(b.rate, b.ci95_low, b.ci95_high))},
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
    if stats["agreement"]:
        parts.append("<p>Engine agreement: the share of sentences whose normalized hypotheses all engines wrote "
                     "alike; across families: the share where every model family wrote one hypothesis in common "
                     "(engines of one family share its blind spots, so only this says the audio was clear).</p>")
        parts.append(table(stats["agreement"], ["voice", "condition", "engines", "utterances", "agreement",
                                             "families", "family_agreement"]))
    return "\n".join(parts)


SECTIONS.register(Section("words", 50, ("words", "blame", "agreement"), render))
