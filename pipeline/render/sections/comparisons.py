"""Every two groups compared: one compact table per factor (the pairs that differ in it alone), and the matrix of
every pair."""
from __future__ import annotations

import html

from pipeline.core.records import label
from pipeline.render.html import SECTIONS, Page, Section, with_ci, table
from pipeline.statistics.comparisons import Comparison
from pipeline.scoring.paired import ALPHA

FACTOR_TABLES = {"voice": "Voices, within each engine and condition",
                 "asr": "Engines, within each voice and condition",
                 "condition": "Conditions, within each voice and engine"}


def stars(p: float) -> str:
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < ALPHA else ""


def comparison_matrix(comparisons: list[Comparison]) -> str:
    """Rows A, columns B: the rate of B minus that of A (ΔWER, or ΔCER by characters), stars by the Holm-corrected
    MAPSSWE p; hover for the verdict."""
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
            tone = "worse" if delta > 0 and c.mapsswe_p_holm < ALPHA else \
                "better" if delta < 0 and c.mapsswe_p_holm < ALPHA else ""
            tds.append(f'<td class="{tone}" title="{html.escape(c.verdict)}">{delta:+.3f}{stars(c.mapsswe_p_holm)}</td>')
        rows.append(f"<tr><th>{html.escape(label(a))}</th>{''.join(tds)}</tr>")
    return (f'<div class="wide"><table class="matrix"><thead><tr><th>A \\ B</th>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def factor_tables(comparisons: list[Comparison], rate: str = "WER") -> str:
    """One compact table per factor: the pairs that differ in it alone (Holm's family), each within what the two
    groups share; `rate`: CER where the unit is the character."""
    def within(c: Comparison) -> str:
        return html.escape(", ".join(x for x, y in zip(c.a, c.b) if x == y and x) or "-")

    def side(c: Comparison, which: int) -> str:
        return html.escape(next((p[which == 1] or "-" for p in zip(c.a, c.b) if p[0] != p[1]), ""))

    def delta(c: Comparison) -> str:
        tone = "" if c.mapsswe_p_holm >= ALPHA or not c.delta_wer else "worse" if c.delta_wer > 0 else "better"
        text = with_ci(c.delta_wer, c.delta_ci95_low, c.delta_ci95_high)
        return f'<span class="{tone}">{html.escape(text)}{stars(c.mapsswe_p_holm)}</span>'

    out = []
    for factor, title in FACTOR_TABLES.items():
        pairs = [c for c in comparisons if c.differs == factor]
        if pairs:
            out.append(f"<h3>{title} ({len(pairs)} pairs)</h3>")
            out.append(table(pairs, ["within", "a", "b", "sentences", "delta", "mapsswe_p_holm"],
                             {"within": within, "a": lambda c: side(c, 0), "b": lambda c: side(c, 1), "delta": delta},
                             {"within": "within", "a": "A", "b": "B", "delta": f"Δ{rate} = B − A [95% CI]",
                              "mapsswe_p_holm": "MAPSSWE p (Holm)"}))
    return "\n".join(out)


def render(page: Page) -> str:
    comparisons = page.stats["comparisons"]
    if not comparisons:
        return "<h2>Comparisons</h2><p>One group only: nothing to compare.</p>"
    one = sum(c.holm_family == "one-factor" for c in comparisons)
    rate = page.scores.rate  # the headline's name: CER in a language scored by characters
    return "\n".join([
        "<h2>Comparisons</h2>",
        f"<p>Each question is a pair of groups that differ in one factor: {one} of the {len(comparisons)} pairs. "
        f"Δ{rate} on the sentences both scored, with a paired-bootstrap 95% CI; red: B has significantly more errors, "
        f"green: fewer (MAPSSWE, Holm-corrected over the {one} one-factor pairs: * p &lt; 0.05, ** p &lt; 0.01, "
        "*** p &lt; 0.001); where a pair shows no difference, its verdict in comparisons.csv says the smallest one "
        'its sentences could detect. <a href="comparisons.csv">comparisons.csv</a> has every pair, the sign and '
        "Wilcoxon tests, ΔCER and the verdicts.</p>",
        factor_tables(comparisons, rate),
        f"<details><summary>Every pair as a matrix ({len(comparisons)} pairs; cross-factor pairs are Holm-corrected "
        f"among themselves)</summary><p>Cell = {rate}(column) − {rate}(row); hover a cell for its verdict.</p>"
        f"{comparison_matrix(comparisons)}</details>"])


SECTIONS.register(Section("comparisons", 20, ("comparisons",), render))
