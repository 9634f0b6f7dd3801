"""What scoring writes, in the pipeline's run directory and in `score --out`: the records' CSVs, summary.json,
sclite's trn, pralign and dtl texts."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from pipeline.core import tables
from pipeline.core.records import as_row
from pipeline.core.tables import Document, Table
from pipeline.scoring import sclite
from pipeline.scoring.align import Op
from pipeline.scoring.config import Comparability
from pipeline.scoring.evaluate import aligned, groups, without_cycle_collection
from pipeline.scoring.utterances import Confusion, ErrorEvent, GroupSummary, Results, ScoredUtterance


def _cell(x) -> str:
    return "" if x is None else str(x)


def dtl(results: Results, top: int = 20) -> str:
    """sclite dtl-style text: confusion pairs and the most deleted and inserted words, per group."""
    lines = [f"Normalizer: {results.normalizer}", ""]
    rate, units = results.rate, f"{results.unit}s"
    members, by_id = groups(results), results.events_by_id
    for s in results.summary:
        events = [e for u in members[s.group] for e in by_id.get(u.id, ())]
        lines.append(f"== voice {s.voice or '-'} | asr {s.asr or '-'} | condition {s.condition or '-'}: "
                     f"micro {rate} {_cell(s.micro_wer)}, macro {rate} {_cell(s.macro_wer)}, {s.errors} errors / "
                     f"{s.ref_words} {units}")
        for title, kind, word in (("CONFUSION PAIRS", Op.SUBSTITUTION.word, None),
                                  ("DELETIONS", Op.DELETION.word, "reference_word"),
                                  ("INSERTIONS", Op.INSERTION.word, "hypothesis_word")):
            if word is None:
                counts = Counter(f"{e.reference_word} ==> {e.hypothesis_word}" for e in events if e.type == kind)
            else:
                counts = Counter(getattr(e, word) for e in events if e.type == kind)
            lines.append(f"{title} (total {sum(counts.values())}, top {top})")
            for text, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]:
                lines.append(f"  {count:4d}: {text}")
        lines.append("")
    return "\n".join(lines)


FILES = (
    Table("utterances.csv", ScoredUtterance, "utterances"),
    Table("errors.csv", ErrorEvent, "events"),
    Table("confusions.csv", Confusion, "confusions"),
    Table("summary.csv", GroupSummary, "summary"),
    Document("summary.json", lambda r: {"normalizer": r.normalizer, "language": r.language, "unit": r.unit,
                                        "rate": r.rate, "comparable": r.comparable.as_json(),
                                        "groups": [as_row(s) for s in r.summary]},
             read=lambda data: {"normalizer": data["normalizer"], "language": data.get("language", "en"),
                                "comparable": Comparability.from_json(data.get("comparable", {}))}),
    Document("ref.trn", lambda r: sclite.write_trn([(u.id, u.reference_normalized) for u in aligned(r)])),
    Document("hyp.trn", lambda r: sclite.write_trn([(u.id, u.hypothesis_normalized) for u in aligned(r)])),
    Document("pralign.txt", lambda r: "".join(text + "\n" for text in r.pralign)),
    Document("dtl.txt", lambda r: dtl(r)),
)


def write(results: Results, out_dir: str | Path) -> list[Path]:
    with without_cycle_collection():
        return tables.write(FILES, results, out_dir)
