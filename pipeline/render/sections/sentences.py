"""Every utterance with its audio (and its speaker reference), its alignment coloured, its figures, measures and
flags, sortable and filterable."""
from __future__ import annotations

import html

from pipeline.core.records import ALIGNED
from pipeline.render.html import SECTIONS, Page, Section, sortable, coloured, player, table
from pipeline.render.sections.lm_attention import ATTENTION_SHOWN
from pipeline.scoring.utterances import ScoredUtterance
from pipeline.scoring.flags import NAMES as FLAGS


def sentences_table(page: Page) -> str:
    utterances = page.scores.utterances
    embedded = {path: key for path, (key, _) in (page.audio or {}).items()}
    measure_columns = list(dict.fromkeys(c for u in utterances for c in u.measures))
    drawable = set(list(page.attention or {})[:ATTENTION_SHOWN])
    texts = {}
    for u in utterances:
        if u.status in ALIGNED:
            texts[u.id] = coloured(page.scores.alignment(u).ops)
        else:
            texts[u.id] = html.escape(u.reference), f'<span class="bad">{html.escape(u.error)}</span>'

    def attributes(u: ScoredUtterance) -> str:
        click = " data-attention" if u.sentence_id in drawable else ""
        return (f' id="u-{html.escape(u.id)}" data-errors="{0 if u.errors == 0 else 1}" '
                f'data-flags="{html.escape(";".join(u.flags))}" data-sentence="{html.escape(u.sentence_id)}"{click}')

    prompted = any(u.speaker_reference for u in utterances)
    columns = ["id", "voice", "asr", "condition", "audio", *(["speaker_reference"] if prompted else []), "reference",
               "hypothesis", "wer", *(["perplexity"] if page.with_lm else []), "status", "flags", *measure_columns]
    cells = {"audio": lambda u: player(u.audio_path, page.folder, embedded),
             "speaker_reference": lambda u: player(u.speaker_reference, page.folder, embedded),
             "reference": lambda u: texts[u.id][0], "hypothesis": lambda u: texts[u.id][1],
             "flags": lambda u: f'<span class="bad">{html.escape(" ".join(u.flags))}</span>',
             **{c: (lambda u, c=c: sortable(u.measures.get(c))) for c in measure_columns}}
    return table(utterances, columns, cells, {"wer": page.scores.rate, "speaker_reference": "speaker reference"},
                 row=attributes, name="utts")


def render(page: Page) -> str:
    options = "".join(f'<option value="{f}">{f}</option>' for f in FLAGS)
    return f"""<h2>Sentences</h2>
<p><label><input type="checkbox" id="only-errors"> only sentences with
errors</label> · <label>flags <select id="only-flag"><option value="">all rows</option>
<option value="any">any flag</option>{options}</select></label> · click a header to sort ·
<span class="S">substitution</span> <span class="D">deletion</span>
<span class="I">insertion</span></p>
{sentences_table(page)}"""


SECTIONS.register(Section("sentences", 90, ("utterances", "events"), render))
