"""Every group's WER (CER where the unit is the character) under each normalizer, and the share of the errors the
run's normalizer removes."""
from __future__ import annotations

import html

from pipeline.render.html import SECTIONS, Page, Section, readable, table


def render(page: Page) -> str:
    effects = page.stats["normalizers"]
    rates = list(dict.fromkeys(k for e in effects for k in e.wer))
    rate = page.scores.rate
    return ("<h2>Normalizer sensitivity</h2><p>Every group's " + rate + " under each normalizer, and the share of "
            f"the unnormalized errors that the normalizer of this run removes. Compare {rate}s only under the same "
            "normalizer.</p>" + table(effects, ["voice", "asr", "condition", *rates, "used", "normalization_share"],
                                      {k: (lambda e, k=k: html.escape(readable(e.wer.get(k)))) for k in rates}))


SECTIONS.register(Section("normalizers", 30, ("normalizers",), render))
