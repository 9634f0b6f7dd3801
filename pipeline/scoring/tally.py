"""What a group's figures need of its rows, kept as each row is scored: its counts for the rates and their
bootstrap, its flags, and its error words for the confusion pairs and dtl. A group's summary is made from its tally
alone, so scoring never has to hold its rows (files.stream writes each row as it is scored)."""
from __future__ import annotations

from array import array
from collections import Counter
from typing import Iterator

from pipeline.core.records import ALIGNED, Group
from pipeline.io.conditions import SILENCE
from pipeline.scoring.flags import NAMES as FLAGS
from pipeline.scoring.rates import corpus_rates, spearman
from pipeline.scoring.utterances import Confusion, ErrorEvent, GroupSummary, ScoredUtterance, Words

def rounded(x: float | None, digits: int = 4) -> float | None:
    return None if x is None else round(x, digits)


class Tally:
    """One group's rows as its figures read them. Scored rows (aligned: status ok, or empty_reference, whose words
    written are insertions over no reference word, as sclite and jiwer count them) give their counts, in order, as
    32-bit arrays (an utterance's count of words or characters is far below 2^31): 100,000 rows keep 1.6 MB, where
    their records would keep half a gigabyte."""

    def __init__(self) -> None:
        self.members = self.flagged = 0
        self.errors, self.ref_words, self.char_errors, self.ref_chars = (array("i") for _ in range(4))
        self.substitutions = self.deletions = self.insertions = self.sentence_errors = 0  # of the scored rows
        self.rated: list[tuple[float, float]] = []  # (perplexity, WER) of scored rows that have both
        self.flags: Counter = Counter()
        self.seconds = array("d")  # of a silence condition's scored rows, and the normalized words written in them
        self.words_heard = 0
        self.words = Words()

    def add(self, u: ScoredUtterance, events: list[ErrorEvent]) -> None:
        self.members += 1
        if u.flags:
            self.flagged += 1
            self.flags.update(u.flags)
        if events:
            self.words.add(events)
        if u.status not in ALIGNED:
            return
        self.errors.append(u.errors)
        self.ref_words.append(u.ref_words)
        self.substitutions += u.substitutions
        self.deletions += u.deletions
        self.insertions += u.insertions
        self.sentence_errors += u.errors > 0
        self.char_errors.append(u.char_errors)
        self.ref_chars.append(u.ref_chars)
        if u.wer is not None and u.perplexity is not None:
            self.rated.append((u.perplexity, u.wer))
        if u.condition == SILENCE:
            self.seconds.append(u.audio_seconds or 0.0)
            self.words_heard += len(u.hypothesis_normalized.split())

    def merge(self, later: Tally) -> None:
        """Take in the tally of the rows that come after this one's (kept in order: the bootstrap draws by
        position, and the seconds are summed in the rows' order, as one tally of them all would)."""
        self.members += later.members
        self.flagged += later.flagged
        self.flags.update(later.flags)
        self.substitutions += later.substitutions
        self.deletions += later.deletions
        self.insertions += later.insertions
        self.sentence_errors += later.sentence_errors
        self.words.merge(later.words)
        for mine, theirs in ((self.errors, later.errors), (self.ref_words, later.ref_words),
                             (self.char_errors, later.char_errors), (self.ref_chars, later.ref_chars),
                             (self.seconds, later.seconds)):
            mine.extend(theirs)
        self.rated += later.rated
        self.words_heard += later.words_heard

    def summary(self, group: Group, normalizer: str, unit: str, n_boot: int, seed: int) -> GroupSummary:
        voice, engine, condition = group
        counts = [(self.errors, self.ref_words)]
        if condition != SILENCE:
            counts.append((self.char_errors, self.ref_chars))
        c, *rest = corpus_rates(counts, n_boot, seed, macro={0})  # the macro CER has no column
        chars = rest[0] if rest else None
        rho = spearman([p for p, _ in self.rated], [w for _, w in self.rated])
        minutes = sum(self.seconds, 0.0) / 60
        return GroupSummary(
            voice=voice, asr=engine, condition=condition, normalizer=normalizer, unit=unit,
            n_utterances=c.n_utterances, n_excluded=self.members - len(self.errors), ref_words=c.ref_words,
            errors=c.errors, substitutions=self.substitutions, deletions=self.deletions, insertions=self.insertions,
            sentence_errors=self.sentence_errors, micro_wer=rounded(c.micro_wer), macro_wer=rounded(c.macro_wer),
            ci95_low=rounded(c.ci_low), ci95_high=rounded(c.ci_high), spearman_n=rho.n,
            spearman_rho=rounded(rho.rho), spearman_p=rounded(rho.p, 6), flagged=self.flagged,
            flag_counts={f: self.flags[f] for f in FLAGS},
            # words an engine wrote per minute of audio in which nothing was said
            hallucination_wpm=rounded(self.words_heard / minutes if minutes else None, 2)
            if condition == SILENCE else None,
            micro_cer=rounded(chars.micro_wer) if chars else None,
            cer_ci95_low=rounded(chars.ci_low) if chars else None,
            cer_ci95_high=rounded(chars.ci_high) if chars else None, macro_ci95_low=rounded(c.macro_low),
            macro_ci95_high=rounded(c.macro_high))

    def confusions(self, group: Group) -> Iterator[Confusion]:
        voice, engine, condition = group
        for (r, h), count in sorted(self.words.substituted.items(), key=lambda kv: (-kv[1], kv[0])):
            yield Confusion(voice=voice, asr=engine, condition=condition, reference_word=r, hypothesis_word=h,
                            count=count)
