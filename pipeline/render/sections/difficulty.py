"""WER by text difficulty (perplexity quartile, length, the LM's surprisal at each word), and whether the ASR
fails where the LM was surprised."""
from __future__ import annotations

from pipeline.render.html import SECTIONS, Page, Section, image, table


def render(page: Page) -> str:
    from pipeline.render import plots

    stats, rate = page.stats, page.scores.rate
    by_lm = any(b.by in ("perplexity", "surprisal") for b in stats["difficulty"])
    parts = ["<h2>Text difficulty</h2><p>" + (
        f"{rate} by perplexity quartile of the run's sentences and by reference length, and the share of words "
        "failed (substituted or deleted) by the decile of their surprisal under the LM" if by_lm else
        f"{rate} by reference length") + ', with bootstrap 95% CIs (<a href="difficulty.csv">difficulty.csv</a>).</p>',
        image(plots.difficulty(stats["difficulty"], rate), f"{rate} by text difficulty")]
    if stats["surprisal"]:
        parts.append("<h3>Does the ASR fail where the LM was surprised?</h3><p>A word's surprisal is −log₂ p of its "
                     "tokens under the LM that wrote the sentences, given the sentence so far. Spearman ρ: the rank "
                     "correlation of a word's surprisal and its failure; positive when surprising words fail more "
                     '(<a href="surprisal.csv">surprisal.csv</a>).</p>')
        parts.append(table(stats["surprisal"], ["voice", "asr", "condition", "words", "failures",
                                             "mean_surprisal_failed", "mean_surprisal_right", "spearman_rho",
                                             "spearman_p"],
                           heads={"mean_surprisal_failed": "bits, failed", "mean_surprisal_right": "bits, right",
                                  "spearman_rho": "ρ", "spearman_p": "p"}))
    return "\n".join(parts)


SECTIONS.register(Section("difficulty", 40, ("difficulty", "surprisal"), render))
