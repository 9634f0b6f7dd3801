"""What the listeners said (a listening test, `listening = "TEST.db"`; pipeline/listen/): each system's MOS or
SMOS with its CI, CMOS and A/B, who was left out and why, the listeners' agreement, every measure of the run
checked against them with a scatter, and each measure on their scale. `listen results` writes the same as
results.html."""
from __future__ import annotations

import dataclasses
import html

from pipeline.listen.kinds import KINDS
from pipeline.render.html import SECTIONS, Page, Section, document, image, readable, table, with_ci


def _ci(value, low, high) -> str:
    return html.escape(with_ci(value, low, high))


def fragment(found) -> str:
    from pipeline.listen.results import ranking
    from pipeline.render import plots

    scale = found.kind.upper()
    parts = [f"<h2>Listeners: {html.escape(found.test)}</h2>",
             f"<p>A {html.escape(scale)} test: {found.listeners} listener(s), {found.accepted} accepted by "
             f"P.808's rules, {found.votes} test votes kept. Intervals are 95% bootstrap CIs that resample "
             "listeners and sentences together.</p>"]
    if found.excluded:
        parts.append("<p>Left out, with every vote of theirs:</p>" + table(
            found.excluded, ["listener", "votes", "reasons"],
            {"reasons": lambda e: html.escape("; ".join(e.reasons))}))
    if found.systems:
        parts.append(table(found.systems, ["system", "votes", "clips", "mean"],
                           {"mean": lambda s: _ci(s.mean, s.ci95_low, s.ci95_high)},
                           {"mean": f"{scale} [95% CI]"}))
    if found.differences:
        parts.append("<p>Each pair of systems, B − A on the sentences both were rated on:</p>" + table(
            found.differences, ["a", "b", "sentences", "delta", "test", "p"],
            {"delta": lambda d: _ci(d.delta, d.ci95_low, d.ci95_high)}, {"delta": f"Δ {scale} [95% CI]"}))
    if found.pairs:
        kind = KINDS.get(found.kind)
        share = ["mean"] if kind.shares else []
        parts.append(table(found.pairs, ["a", "b", "votes", "preference", *share, "prefer_a", "prefer_b",
                                         "no_preference", "test", "p"],
                           {"preference": lambda p: _ci(p.preference, p.preference_ci95_low, p.preference_ci95_high),
                            "mean": lambda p: _ci(p.mean, p.ci95_low, p.ci95_high)},
                           {"preference": f"{kind.preferred} [95% CI]", "mean": "share preferring B [95% CI]"}))
    for name, rows in found.tables.items():  # a kind's own records, every cell as text
        if rows:
            fields = [f.name for f in dataclasses.fields(rows[0])]
            lists = {f: (lambda r, f=f: html.escape("; ".join(f"{x}" for x in getattr(r, f)))) for f in fields
                     if isinstance(getattr(rows[0], f), list)}
            about = " ".join((type(rows[0]).__doc__ or "").split())
            parts.append(f"<p>{html.escape(name)}.csv: {html.escape(about)}</p>" + table(rows, fields, lists))
    if found.strengths:
        parts.append("<p>Bradley–Terry log-strengths (mean 0):</p>" + table(
            found.strengths, ["system", "score"], {"score": lambda s: _ci(s.score, s.ci95_low, s.ci95_high)}))
    if found.alpha is not None:
        parts.append(f"<p>The listeners' agreement: Krippendorff's α ({html.escape(KINDS.get(found.kind).agreement)})"
                     f" = {readable(found.alpha)}.</p>")
    if found.agreements:
        parts.append("<p>Each measure against the listeners, as the VoiceMOS Challenge scores a predictor "
                     "(utterance level: each clip's mean vote; system level: each system's mean):</p>" + table(
                         found.agreements, ["measure", "level", "n", "mse", "lcc", "srcc", "ktau"],
                         {k: (lambda a, k=k: _ci(getattr(a, k), getattr(a, f"{k}_ci95_low"),
                                                 getattr(a, f"{k}_ci95_high"))) for k in ("mse", "lcc", "srcc",
                                                                                          "ktau")},
                         {k: f"{k.upper()} [95% CI]" for k in ("mse", "lcc", "srcc", "ktau")}))
        ranks = ranking(found)
        if ranks:
            parts.append("<p>" + "<br>".join(html.escape(line) for line in ranks.splitlines()) + "</p>")
        fits = {c.measure: c for c in found.calibrations}
        parts.append(image(plots.predicted_vs_listeners(found.clips, list(dict.fromkeys(
            a.measure for a in found.agreements)), fits), "predicted against the listeners"))
    if found.calibrations:
        parts.append(f"<p>Each measure on this panel's {scale} scale (least squares on the clips' means; it holds "
                     "only over the range it was fitted on). <code>assess.calibration</code> adds these as "
                     "<code>calibrated_&lt;measure&gt;</code> columns to a run.</p>" + table(
                         found.calibrations, ["measure", "intercept", "slope", "residual_sd", "low", "high", "clips"],
                         {"intercept": lambda c: _ci(c.intercept, c.intercept_ci95_low, c.intercept_ci95_high),
                          "slope": lambda c: _ci(c.slope, c.slope_ci95_low, c.slope_ci95_high)},
                         {"low": "fitted from", "high": "to"}))
    return "".join(parts)


def page(found) -> str:
    """results.html: the section alone, as its own page."""
    return document(f"{found.test}: listening test", fragment(found))


def render(page_: Page) -> str:
    return fragment(page_.listening) if page_.listening is not None else ""


SECTIONS.register(Section("listeners", 75, (), render))
