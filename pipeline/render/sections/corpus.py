"""Each group's WER with its CI, beside its CER, excluded rows, flags and the perplexity correlation; the WER
heatmaps, WER against perplexity and the LM's loss curve."""
from __future__ import annotations

import html

from pipeline.render.html import AUDIO_NOTE, SECTIONS, Page, Section, readable, image, with_ci, table


def corpus_table(summary: list, with_lm: bool = True, macro_first: bool = False) -> str:
    """The group figures, one row per group, in as many columns as fit a page."""
    rates = ["macro_wer", "wer"] if macro_first else ["wer", "macro_wer"]
    columns = ["voice", "asr", "condition", "n_utterances", "n_excluded", *rates, "micro_cer",
               *(["spearman"] if with_lm else []), "flagged"]
    cells = {"wer": lambda s: html.escape(with_ci(s.micro_wer, s.ci95_low, s.ci95_high)),
             "macro_wer": lambda s: html.escape(with_ci(s.macro_wer, s.macro_ci95_low, s.macro_ci95_high)),
             "spearman": lambda s: html.escape(
                 f"{readable(s.spearman_rho)} (p {readable(s.spearman_p)}, n {s.spearman_n})"
                 if s.spearman_rho is not None else f"n {s.spearman_n}")}
    heads = {"n_utterances": "n", "n_excluded": "excluded", "wer": "micro WER [95% CI]", "macro_wer": "macro WER [95% CI]",
             "micro_cer": "micro CER", "spearman": "Spearman ρ (perplexity, WER)"}
    if any(s.hallucination_wpm is not None for s in summary):
        columns.append("hallucination_wpm")
        heads["hallucination_wpm"] = "words/min in silence"
    return table(summary, columns, cells, heads)


def render(page: Page) -> str:
    from pipeline.render import plots

    scores, score = page.scores, page.score
    figures = [plots.wer_heatmaps(scores.summary), plots.wer_vs_perplexity(scores.utterances),
               plots.loss_curve(page.loss_log) if page.loss_log else None]
    return f"""<h2>Corpus figures</h2>
<p>micro WER = Σ errors / Σ reference words (as sclite); macro WER = mean of per-sentence WER (as seed-tts-eval).
CI: bootstrap 95% over sentences.{" Spearman: perplexity vs WER." if page.with_lm else ""} Normalizer:
<code>{html.escape(score.normalize)}</code>.{AUDIO_NOTE if page.audio else ""}</p>
{corpus_table(scores.summary, page.with_lm, score.headline == "macro")}
<div class="plots">{"".join(image(png, name) for png, name in zip(figures, ("groups", "perplexity", "loss")))}</div>"""


SECTIONS.register(Section("corpus", 10, ("summary", "utterances"), render))
