"""The measures beside WER: each column's figures per group, the comparisons between groups, the voices'
similarity, and a plot of the distributions. Every declared column appears here with no code of its own."""
from __future__ import annotations

import html

from pipeline.render.html import SECTIONS, Page, Section, readable, image, with_ci, table


def _similarity_cell(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return "<td></td>"
    shade = int(255 - 155 * max(0.0, min(1.0, value)))
    return (f'<td data-shade="{shade}" title="95% CI [{readable(low)}, {readable(high)}]">{readable(value)}</td>')


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


def render(page: Page) -> str:
    from pipeline.render import plots

    stats, declared = page.stats, page.measures
    summary = stats["measure_summary"]
    if not summary:
        return ""
    meanings = "".join(f"<li><code>{html.escape(c)}</code>: {html.escape(m)}</li>"
                       for d in declared.values() for c, m in d.columns.items())
    meanings += "".join(f"<li><b>{html.escape(d.name)}</b> compares with {html.escape(d.comparable)}.</li>"
                        for d in declared.values() if d.comparable)
    cells = {"mean": lambda s: html.escape(with_ci(s.mean, s.ci95_low, s.ci95_high)),
             "rho": lambda s: html.escape(f"{readable(s.spearman_rho_wer)} (p {readable(s.spearman_p)})"
                                          if s.spearman_rho_wer is not None else "")}
    rate = page.scores.rate
    heads = {"mean": "mean [95% CI]", "rho": f"Spearman ρ with {rate}"}
    parts = ["<h2>Naturalness and voice</h2>",
             f"<ul>{meanings}</ul><p>Per group: the mean with a bootstrap 95% CI over sentences, percentiles, and "
             f"the rank correlation with {rate}. The sentences table below sorts by each column, with each line's "
             "audio beside it.</p>",
             table(summary, ["measure", "voice", "asr", "condition", "n", "mean", "p5", "median", "p95", "rho"],
                   cells, heads),
             image(plots.measure_distributions(page.scores.utterances), "measures")]
    comparisons = [c for c in stats["measure_comparisons"] if c.holm_family == "one-factor"]
    if comparisons:
        parts.append("<p>Groups that heard different audio on the same sentences: Δ = B − A with a paired-bootstrap "
                     "95% CI, the exact Wilcoxon signed-rank p, Holm-corrected per measure over the one-factor pairs "
                     '(every pair: <a href="measure_comparisons.csv">measure_comparisons.csv</a>).</p>')
        parts.append(table(comparisons, ["measure", "a", "b", "sentences", "delta", "exact_p_holm", "verdict"],
                           {"delta": lambda c: html.escape(with_ci(c.delta, c.delta_ci95_low, c.delta_ci95_high))},
                           {"delta": "Δ [95% CI]", "exact_p_holm": "p (exact, Holm)"}))
    if stats["voices"]:
        parts.append("<p>Speaker similarity between voices (Resemblyzer): the mean cosine over utterances of "
                     "different sentences; the diagonal is each voice's consistency. Hover a cell for its CI.</p>")
        parts.append(voices_matrix(stats["voices"]))
    return "".join(parts)


SECTIONS.register(Section("measures", 70, ("measure_summary", "measure_comparisons", "voices"), render))
