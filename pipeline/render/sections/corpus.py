"""Each group's WER with its CI, beside its CER, excluded rows, flags and the perplexity correlation; the WER
heatmaps, WER against perplexity and the LM's loss curve."""
from __future__ import annotations

import html

from pipeline.render.html import AUDIO_NOTE, SECTIONS, Page, Section, readable, image, with_ci, table


def corpus_table(summary: list, with_lm: bool = True, macro_first: bool = False, rate: str = "WER") -> str:
    """The group figures, one row per group, in as many columns as fit a page; `rate`: CER where the unit is
    the character (scoring/language.py), whose columns then count characters."""
    rates = ["macro_wer", "wer"] if macro_first else ["wer", "macro_wer"]
    columns = ["voice", "asr", "condition", "n_utterances", "n_excluded", *rates, "micro_cer",
               *(["spearman"] if with_lm else []), "flagged"]
    cells = {"wer": lambda s: html.escape(with_ci(s.micro_wer, s.ci95_low, s.ci95_high)),
             "macro_wer": lambda s: html.escape(with_ci(s.macro_wer, s.macro_ci95_low, s.macro_ci95_high)),
             "spearman": lambda s: html.escape(
                 f"{readable(s.spearman_rho)} (p {readable(s.spearman_p)}, n {s.spearman_n})"
                 if s.spearman_rho is not None else f"n {s.spearman_n}")}
    heads = {"n_utterances": "n", "n_excluded": "excluded", "wer": f"micro {rate} [95% CI]",
             "macro_wer": f"macro {rate} [95% CI]", "micro_cer": "micro CER (the normalized text's)",
             "spearman": f"Spearman ρ (perplexity, {rate})"}
    if any(s.hallucination_wpm is not None for s in summary):
        columns.append("hallucination_wpm")
        heads["hallucination_wpm"] = "words/min in silence"
    return table(summary, columns, cells, heads)


def render(page: Page) -> str:
    from pipeline.render import plots

    scores, score = page.scores, page.score
    rate, unit = scores.rate, scores.unit
    figures = [plots.wer_heatmaps(scores.summary, rate), plots.wer_vs_perplexity(scores.utterances, rate),
               plots.loss_curve(page.loss_log) if page.loss_log else None]
    return f"""<h2>Corpus figures</h2>
<p>micro {rate} = Σ errors / Σ reference {unit}s (as sclite); macro {rate} = mean of per-sentence {rate} (as
seed-tts-eval). CI: bootstrap 95% over sentences.{f" Spearman: perplexity vs {rate}." if page.with_lm else ""}
Normalizer: <code>{html.escape(score.normalize)}</code>; language <code>{html.escape(scores.language)}</code>, whose
unit is the {unit}.{AUDIO_NOTE if page.audio else ""}</p>
{corpus_table(scores.summary, page.with_lm, score.headline == "macro", rate)}
{languages(page)}
<div class="plots">{"".join(image(png, name) for png, name in zip(figures, ("groups", "perplexity", "loss")))}</div>"""


def languages(page: Page) -> str:
    """Where the other languages of a command in several are (cli/several.py): their runs, beside this one's
    folder, and the table of all their rates, written when the last of them ends."""
    if len(page.languages) < 2:
        return ""
    from pipeline.scoring.language import base

    others = ", ".join(f'<a href="../{html.escape(run)}/report.html">{html.escape(lang)}</a>'
                       for lang, run in page.languages.items() if lang != base(page.scores.language))
    table = html.escape(page.languages_table)
    return (f"<p>This run is the <code>{html.escape(page.scores.language)}</code> part of a command in "
            f"{html.escape(', '.join(page.languages))}, a run per language; the others: {others}. Their rates side "
            f'by side: <a href="{table}">languages.csv</a>. A CER and a WER do not compare: read each language as '
            "its own quality, not one scale.</p>")


SECTIONS.register(Section("corpus", 10, ("summary", "utterances"), render))
