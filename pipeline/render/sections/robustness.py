"""Where each voice and engine breaks down in noise: the breakdown SNR and the WER-vs-SNR curves."""
from __future__ import annotations

import html

from pipeline.render.html import SECTIONS, Page, Section, image, table


def render(page: Page) -> str:
    from pipeline.render import plots

    breakdown, rate = page.stats["breakdown"], page.scores.rate
    if not breakdown:
        return ""
    return "\n".join([
        f"<h2>Robustness</h2><p>Breakdown SNR: where {rate} first reaches twice the clean {rate} (at least 0.02), "
        "interpolated on the measured curve, with a bootstrap 95% CI over sentences.</p>",
        table(breakdown, ["voice", "asr", "clean_wer", "threshold", "breakdown_snr", "ci95_low", "ci95_high", "curve"],
              {"curve": lambda b: html.escape(", ".join(f"{p.snr:g} dB: {p.wer:.3g}" for p in b.curve))},
              {"curve": f"{rate} by SNR"}),
        image(plots.wer_vs_snr(page.scores.summary, breakdown, rate), f"{rate} vs SNR")])


SECTIONS.register(Section("robustness", 60, ("breakdown", "summary"), render))
