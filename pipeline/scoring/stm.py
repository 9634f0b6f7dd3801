"""NIST's stm references and ctm hypotheses, cut into utterances as sclite cuts them (`sclite -r ref.stm stm -h hyp.ctm
ctm`, sctk's stm2ctm.c): each of a channel's segments takes the ctm words of that file and channel whose midpoint
(start + duration / 2) falls before the segment's end (a C float, as sclite reads it) and after the words of the
segments before it, so words before the first segment join the first and words in a gap join the segment after it;
the channel's last segment takes every word left. A segment whose text holds IGNORE_TIME_SEGMENT_IN_SCORING is not
scored, and the words it took are dropped. sclite's -m (`reduce`) leaves out the segments outside the time range of
a channel's words (`ref`: a ctm of part of a recording), or the words outside the range of its segments (`hyp`), as
stm2ctm.c's align_one_channel does (`Reduced`), in two places not: where a channel's words begin or end with an
<ALT_BEGIN> block, sclite takes the range from its mark lines, whose `*` times it reads as 0 s, and here from its
words; and after a block -m hyp leaves out whole, sclite's reading of the words that follow goes wrong, and here
they are read as written. Each scored segment is an utterance named as sclite names it, `<speaker>-<n>` (its
speaker's n-th segment, from 000), whose speaker is the stm's, `-` or `_` in it or not.

Where sclite needs both files sorted alike (by file, channel and time) and scores a channel it cannot pair as if
nothing was said, here a channel's segments and words are paired by file and channel, each in time order; for files
sclite reads, that is sclite's pairing. File and channel names match as sclite matches them, whatever their case."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from itertools import chain
from typing import Iterator

from pipeline.errors import InputError
from pipeline.scoring import glm
from pipeline.scoring.lenient import NOTHING
from pipeline.io.inputs import text_lines

IGNORED = ("IGNORE_TIME_SEGMENT_IN_SCORING", "IGNORETIMESEGMENTINSCORING")


@dataclass(frozen=True, slots=True, kw_only=True)
class Segment:
    """One stm line: `file channel speaker start end [<labels>] text`."""
    file: str
    channel: str
    speaker: str
    start: float
    end: float
    text: str
    labels: str = ""  # its `<...>` field (scoring/labels.py), as written
    line: int = 0  # in the stm file

    @property
    def ignored(self) -> bool:
        return any(mark in self.text.upper() for mark in IGNORED)

    @property
    def held(self) -> tuple[float, float]:
        """Its start and end as sclite holds them, in C floats (stm.c reads them with a float atof): a word's
        midpoint at 7.59 s is before the end of a segment written to end at 7.59."""
        return _single(self.start), _single(self.end)


@dataclass(frozen=True, slots=True, kw_only=True)
class Word:
    """One ctm line: `file channel start duration word [confidence]`; or one of the words, or the alternation
    (`word` its text, `{ A / B C }`), a GLM rewrote its word into, in its line's place (`start`, `duration`) and
    placed in a segment as sclite places what csrfilt.sh writes for it (`placed_at`)."""
    file: str
    channel: str
    start: float
    duration: float
    word: str
    placed_at: float | None = None
    confidences: tuple[float | None, ...] = (None,)  # of each of word.split(), from its ctm line's sixth field:
    # None for a line without one, and for an alternation's braces and slashes
    heard: tuple[tuple[float, float], ...] = ()  # (start, end) of each ctm line sclite reads for it, where they are
    # not its own: the words csrfilt.sh writes for a line a GLM rewrites, every word of a ctm alternation
    block: bool = False  # read from an <ALT_BEGIN> block (a ctm's, or one csrfilt.sh writes for a GLM's alternation)

    @property
    def midpoint(self) -> float:
        return self.start + self.duration / 2 if self.placed_at is None else self.placed_at

    @property
    def lines(self) -> tuple[tuple[float, float], ...]:
        """(start, end) of each ctm line sclite reads for it, in order: what sclite's -m measures."""
        return self.heard or ((self.start, self.start + self.duration),)

    @property
    def unconfident(self) -> int:
        """Its words without a confidence."""
        if not self.word.startswith("{"):
            return self.confidences.count(None)
        return sum(c is None for t, c in zip(self.word.split(), self.confidences) if t not in SYNTAX)


COMMENTS = {"stm": (";;", "**"), "ctm": (";",)}  # what opens a line sclite reads past, in each kind of file
ARTICLE = {"stm": "an", "ctm": "a"}


def _fields(path: str, flag: str, least: int, kind: str, layout: str) -> Iterator[tuple[int, list[str]]]:
    for n, line in enumerate(text_lines(path, flag), 1):
        fields = line.split()
        if not fields or fields[0].startswith(COMMENTS[kind]):
            continue
        if len(fields) < least:
            raise InputError(f"{flag} {path}: line {n} has {len(fields)} fields; {ARTICLE[kind]} {kind} line is "
                             f"`{layout}`")
        yield n, fields


def _seconds(value: str, path: str, flag: str, n: int, what: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise InputError(f"{flag} {path}: line {n}: its {what} {value!r} is not a number of seconds") from None


def _confidence(fields: list[str], path: str, flag: str, n: int) -> float | None:
    """A ctm line's confidence, from its sixth field: none where it is `NA`, as sclite reads it."""
    if fields[5].upper() == "NA":
        return None
    try:
        return float(fields[5])
    except ValueError:
        raise InputError(f"{flag} {path}: line {n}: its sixth field {fields[5]!r} is no confidence; a ctm line is "
                         "`file channel start duration word [confidence]`, the confidence a number (or NA)") from None


def read_stm(path: str, flag: str = "--ref", rules: glm.Glm | None = None) -> list[Segment]:
    """`rules`: a GLM's, applied to each segment's text as csrfilt.sh -i stm applies them."""
    out = []
    for n, fields in _fields(path, flag, 5, "stm", "file channel speaker start end [<labels>] text"):
        words, labels = fields[5:], ""
        if words and words[0].startswith("<"):
            labels, words = words[0], words[1:]
        text = " ".join(words)
        if rules is not None:
            text = _filtered(rules, text, path, n)
        out.append(Segment(file=fields[0], channel=fields[1], speaker=fields[2],
                           start=_seconds(fields[3], path, flag, n, "start"),
                           end=_seconds(fields[4], path, flag, n, "end"), text=text, labels=labels, line=n))
    if not out:
        raise InputError(f"{flag} {path}: no segment; an stm line is `file channel speaker start end text`")
    return out


def read_ctm(path: str, flag: str = "--hyp", rules: glm.Glm | None = None) -> list[Word]:
    """A ctm's words; an alternation (`<ALT_BEGIN>`, a way's words, `<ALT>`, another's, `<ALT_END>`, as sclite reads
    one) is one Word whose text writes it (`{ A / B C }`, `@` for a way of no word), placed by its words' latest
    midpoint, as sclite places the block. `rules`: a GLM's, applied to each word as csrfilt.sh -i ctm applies them:
    a word it rewrites into several is as many words, each placed by the time csrfilt gives it, and one it rewrites
    into an alternation is such a Word too."""
    return ctm_words(ctm_lines(path, flag), path, flag, rules)


def ctm_lines(path: str, flag: str) -> list[tuple[int, list[str]]]:
    """Each line sclite reads of a ctm, by its number: its fields."""
    return list(_fields(path, flag, 5, "ctm", "file channel start duration word [confidence]"))


def csrfilt_lines(lines: list[tuple[int, list[str]]], path: str, rules: glm.Glm) -> list[tuple[int, list[str]]]:
    """A ctm's lines as csrfilt.sh -i ctm writes them through a GLM's `rules` (glm.ctm_output), each numbered as the
    line it was written for; an alternation's mark lines as they stand."""
    out = []
    for n, fields in lines:
        if fields[4].upper().startswith("<ALT"):
            out.append((n, fields))
            continue
        try:
            out += [(n, written) for written in glm.ctm_output(fields, rules.filter(fields[4], padded=False))]
        except ValueError as e:
            raise InputError(f"--glm on {path}: line {n}: {e}") from None
    return out


def ctm_words(lines: list[tuple[int, list[str]]], path: str, flag: str = "--hyp",
              rules: glm.Glm | None = None) -> list[Word]:
    """The words (read_ctm's) of some of a ctm's lines."""
    out, block = [], None
    for n, fields in lines:
        if fields[4].upper().startswith("<ALT"):
            block = _marked(block, fields, out, f"{flag} {path}", n)
            continue
        words = _words(fields, path, flag, n, rules)
        if block is None:
            out += words
        elif any(w.word.startswith("{") for w in words):
            raise InputError(f"--glm on {path}: line {n}: the GLM makes a word of a ctm alternation an alternation, "
                             "and sclite reads none inside another")
        else:
            block.items += words
    if block is not None:
        raise InputError(f"{flag} {path}: line {block.line}: <ALT_BEGIN> without its <ALT_END>")
    return out


@dataclass(kw_only=True)
class _Alternation:
    """A ctm alternation being read: where it opened, and its words and `<ALT>` marks so far."""
    line: int
    file: str
    channel: str
    items: list[Word | str]


ALTERNATION_MARKS = ("<ALT_BEGIN>", "<ALT>", "<ALT_END>")  # sclite's, whatever their case


def _marked(block: _Alternation | None, fields: list[str], out: list[Word], file: str,
            n: int) -> _Alternation | None:
    """The alternation being read after mark line `n`; one it ends joins `out`."""
    mark, where = fields[4].upper(), f"{file}: line {n}"
    if mark not in ALTERNATION_MARKS:
        raise InputError(f"{where}: {fields[4]} is no ctm alternation mark; sclite's are "
                         f"{', '.join(ALTERNATION_MARKS)}")
    if (mark == "<ALT_BEGIN>") != (block is None):
        raise InputError(f"{where}: {fields[4]} " + ("inside an alternation, and sclite reads none inside another"
                                                     if block else "outside an alternation (<ALT_BEGIN> opens one)"))
    if block is None:
        return _Alternation(line=n, file=fields[0], channel=fields[1], items=[])
    block.items.append(mark)
    if mark == "<ALT>":
        return block
    words = [w for w in block.items if isinstance(w, Word)]
    if not words:
        return None
    latest = max(w.midpoint for w in words)  # of every word of the block, as sclite places it
    heard = tuple(chain.from_iterable(w.lines for w in words))  # sclite -m hyp keeps a block whole if it keeps
    # any word of it
    ways = _ways(block.items)
    if len(ways) == 1:  # one way: its words, placed as the block
        out += [Word(file=w.file, channel=w.channel, start=w.start, duration=w.duration, word=w.word,
                     placed_at=latest, confidences=w.confidences, heard=heard, block=True) for w in ways[0]]
        return None
    text = " / ".join(" ".join(w.word for w in way) or NOTHING for way in ways)
    confidences = [None]  # the opening brace
    for way in ways:
        confidences += [c for w in way for c in w.confidences] or [None]  # `@`
        confidences.append(None)  # a slash, or the closing brace
    out.append(Word(file=block.file, channel=block.channel, start=words[0].start,
                    duration=words[-1].start + words[-1].duration - words[0].start, word=f"{{ {text} }}",
                    placed_at=latest, confidences=tuple(confidences), heard=heard, block=True))
    return None


def _ways(items: list[Word | str]) -> list[list[Word]]:
    """An alternation's ways, as sclite's Network_create_from_WTOKE reads them from its words and marks (the last
    `<ALT_END>`): a way of no word (`@`) passes over the word after it, which no way then holds, as sclite's reading
    does."""
    ways, i = [], 0
    while i < len(items):
        way = []
        while isinstance(items[i], Word):
            way.append(items[i])
            i += 1
        if not way:
            i += 1
        ways.append(way)
        if i >= len(items):
            break
        if items[i] == "<ALT>" and i + 1 < len(items) and items[i + 1] == "<ALT_END>":
            pass
        elif items[i] != "<ALT_END>":
            i += 1
        if i >= len(items) or items[i] == "<ALT_END>":
            break
    return ways


def _words(fields: list[str], path: str, flag: str, n: int, rules: glm.Glm | None) -> list[Word]:
    """A ctm line's words, through the GLM where there is one."""
    start, duration = (_seconds(fields[k], path, flag, n, what) for k, what in ((2, "start"), (3, "duration")))
    conf = None if len(fields) < 6 else _confidence(fields, path, flag, n)
    if rules is None:
        return [Word(file=fields[0], channel=fields[1], start=start, duration=duration, word=fields[4],
                     confidences=(conf,))]
    try:
        entries = glm.ctm_words(fields, rules.filter(fields[4], padded=False))
    except ValueError as e:
        raise InputError(f"--glm on {path}: line {n}: {e}") from None
    out = []
    for ways in entries:  # each word csrfilt writes keeps its line's confidence
        text = " / ".join(" ".join(w.word for w in way) for way in ways)
        word = text if len(ways) == 1 else f"{{ {text} }}"
        heard = tuple((float(w.start), float(w.start) + float(w.duration)) for way in ways for w in way)
        out.append(Word(file=fields[0], channel=fields[1], start=start, duration=duration, word=word,
                        placed_at=max(float(w.start) + float(w.duration) / 2 for way in ways for w in way),
                        confidences=tuple(None if t in SYNTAX else conf for t in word.split()),
                        heard=() if heard == ((start, start + duration),) else heard, block=len(ways) > 1))
    return out


SYNTAX = ("{", "/", "}", NOTHING)  # what writes an alternation, no word of its own


def _filtered(rules: glm.Glm, text: str, path: str, n: int) -> str:
    try:
        return rules.filter(text)
    except ValueError as e:
        raise InputError(f"--glm on {path}: line {n}: {e}") from None


def channel(file: str, name: str) -> tuple[str, str]:
    """A channel's key: sclite folds the case of the names it compares."""
    return file.casefold(), name.casefold()


@dataclass(frozen=True, kw_only=True)
class Cut:
    """An stm and a ctm cut into utterances, and what was left out, as sclite's feedback counts it."""
    utterances: list[tuple[str, str, str]]  # (id, reference, hypothesis) of each scored segment
    channels: int
    ignored_segments: int
    ignored_words: int  # the ctm words the ignored segments took
    labels: dict[str, tuple[str, int]] = field(default_factory=dict)  # id → its segment's `<...>` field and line
    confidences: dict[str, tuple[float | None, ...]] = field(default_factory=dict)  # id → a confidence for each
    # word of its hypothesis, where every word of the ctm has one (scoring/confidence.py)
    unconfident: int = 0  # where some have one: the ctm words that have none (else 0)
    segments: tuple[int, ...] = ()  # the stm line of each scored segment (a ctm reference's: the line each
    # utterance's reference begins at, 0 for none)
    reduced: Reduced | None = None  # what sclite's -m left out, where it was asked for
    unheard: int = 0  # a ctm reference's channels (scoring/chop.py) the hypothesis has no word of
    timed: dict[str, tuple[list[tuple[float, float]], list[tuple[float, float]]]] = field(default_factory=dict)
    # id → the (start, end) of each word of its reference and of its hypothesis, in order (`@` left out), where
    # they are aligned by time (a ctm reference, sclite -T)

    def line(self, ctm: str) -> str:
        said = f"{ctm}: {counted(len(self.utterances), 'segment')} of {counted(self.channels, 'channel')} scored"
        if self.ignored_segments:
            said += (f"; left out, as sclite leaves them out: {counted(self.ignored_segments, 'segment')} marked "
                     f"IGNORE_TIME_SEGMENT_IN_SCORING and the {counted(self.ignored_words, 'ctm word')} in them")
        return said + (self.reduced.line if self.reduced else "")


@dataclass(frozen=True, kw_only=True)
class Reduced:
    """What sclite's -m left out: its feedback's skipped segments and words, and the words it then scores nowhere."""
    asked: frozenset[str]
    segments: int = 0  # `ref`: outside the time range of their channel's words
    words: int = 0  # `hyp`: outside the time range of their channel's (kept) segments
    unplaced: int = 0  # after the last kept segment of a channel whose last segment `ref` left out
    blocks: int = 0  # the words of <ALT_BEGIN> blocks `hyp` left out whole
    marked: int = 0  # `ref`: channels whose words begin or end with such a block

    @property
    def line(self) -> str:
        asked = [r for r in REDUCTIONS if r in self.asked]
        said = [counted(n, thing) for n, thing, side in ((self.segments, "stm segment", "ref"),
                                                         (self.words, "ctm word", "hyp")) if side in asked]
        line = f"; sclite -m {' '.join(asked)} left out {' and '.join(said)}"
        if self.unplaced:
            line += (f", and {counted(self.unplaced, 'ctm word')} after the last segment it kept, which sclite "
                     "scores in no segment")
        if self.blocks:
            line += (f"; of them, {counted(self.blocks, 'word')} of alternations left out whole, after which sclite "
                     "misreads (its <ALT_END> line stays and makes the words up to the next one an alternation): "
                     "here what follows is scored as written")
        if self.marked:
            line += (f"; in {counted(self.marked, 'channel')} the words begin or end with an alternation, whose "
                     "<ALT> lines' times sclite measures from (`*`, as csrfilt.sh writes them, is 0 s to it: a "
                     "channel ending in one loses every segment): here from its words' times")
        return line


REDUCTIONS = ("ref", "hyp")  # sclite -m's: the stm's segments to the ctm's time range, the ctm's words to the stm's


def counted(n: int, thing: str) -> str:
    return f"{n} {thing}{'s' * (n != 1)}"


def _said(word: Word) -> int:
    return sum(t not in SYNTAX for t in word.word.split())


def _single(seconds: float) -> float:
    """As a C float holds it: sclite reads an stm's times into floats."""
    return struct.unpack("f", struct.pack("f", seconds))[0]


def _kept(segments: list[Segment], words: list[Word], reduce: frozenset[str]) -> list[bool]:
    """Which of a channel's segments (in time order) sclite -m ref keeps against its words (in time order): those
    neither ending by the first word's start nor starting at the last word's end; every one where the channel has
    no word."""
    if "ref" not in reduce or not words:
        return [True] * len(segments)
    first, last = words[0].lines[0][0], words[-1].lines[-1][1]
    return [not (first >= s.held[1] or last <= s.held[0]) for s in segments]


def _usable(segments: list[Segment], words: list[Word], reduce: frozenset[str]) -> list[bool]:
    """Which of a channel's words sclite -m hyp keeps: those with a line neither starting after the kept segments'
    last end nor ending before their first start (none where no segment is kept)."""
    if "hyp" not in reduce:
        return [True] * len(words)
    begin = min((s.held[0] for s in segments), default=9999999.0)
    end = max((s.held[1] for s in segments), default=-999999.0)
    return [any(not (start > end or stop < begin) for start, stop in w.lines) for w in words]


def utterances(segments: list[Segment], words: list[Word], ctm: str, flag: str = "--hyp",
               reduce: frozenset[str] = frozenset()) -> Cut:
    """Each scored segment's utterance, in the stm's order of channels and, within one, of time; an InputError
    where the ctm has words of a channel the stm has no segment of (sclite stops there too). `reduce`: sclite -m's
    REDUCTIONS asked for."""
    channels: dict[tuple[str, str], list[Segment]] = {}
    for s in segments:
        channels.setdefault(channel(s.file, s.channel), []).append(s)
    heard: dict[tuple[str, str], list[Word]] = {}
    for w in words:
        heard.setdefault(channel(w.file, w.channel), []).append(w)
    stray = next((key for key in heard if key not in channels), None)
    if stray is not None:
        w = heard[stray][0]
        raise InputError(f"{flag} {ctm}: words of file {w.file!r} channel {w.channel!r} (from {w.start} s), of "
                         "which the stm reference has no segment; give the reference's segments of every channel "
                         "the ctm transcribes")
    known = any(c is not None for w in words for c in w.confidences)
    unconfident = sum(w.unconfident for w in words if None in w.confidences) if known else 0  # an alternation's
    # braces are None
    confident = known and not unconfident
    out, said, labels, confidences, scored = [], {}, {}, {}, []
    ignored_segments = ignored_words = reduced_segments = reduced_words = unplaced = blocks = marked = 0
    for key, of_channel in channels.items():
        of_channel = sorted(of_channel, key=lambda s: s.start)
        pending = sorted(heard.get(key, []), key=lambda w: w.start)
        kept = _kept(of_channel, pending, reduce)
        usable = _usable([s for s, k in zip(of_channel, kept) if k], pending, reduce)
        if reduce:
            reduced_segments += kept.count(False)
            marked += "ref" in reduce and bool(pending) and (pending[0].block or pending[-1].block)
            reduced_words += sum(_said(w) for w, u in zip(pending, usable) if not u)
            blocks += sum(_said(w) for w, u in zip(pending, usable) if w.block and not u)
        taken = 0
        for i, s in enumerate(of_channel):
            if not kept[i]:  # its words, if any, go to the next segment kept, as sclite cuts them
                continue
            first = taken
            if i == len(of_channel) - 1:
                taken = len(pending)
            else:
                end = s.held[1]
                while taken < len(pending) and pending[taken].midpoint < end:
                    taken += 1
            if s.ignored:
                ignored_segments += 1
                ignored_words += taken - first
                continue
            n = said[s.speaker] = said.get(s.speaker, -1) + 1
            uid = f"{s.speaker}-{n:03d}"
            its = pending[first:taken]
            if reduce:
                its = [w for w, u in zip(its, usable[first:taken]) if u]
            out.append((uid, s.text, " ".join(w.word for w in its)))
            scored.append(s.line)
            if confident:
                confidences[uid] = tuple(chain.from_iterable(w.confidences for w in its))
            if s.labels:
                labels[uid] = s.labels, s.line
        unplaced += sum(_said(w) for w, u in zip(pending[taken:], usable[taken:]) if u)
    return Cut(utterances=out, channels=len(channels), ignored_segments=ignored_segments,
               ignored_words=ignored_words, labels=labels, confidences=confidences,
               unconfident=unconfident, segments=tuple(scored),
               reduced=Reduced(asked=reduce, segments=reduced_segments, words=reduced_words, unplaced=unplaced,
                               blocks=blocks, marked=marked) if reduce else None)


def speaker_of(utterance_id: str) -> str:
    """The stm speaker of an utterance named by `utterances`."""
    return utterance_id.rpartition("-")[0]
