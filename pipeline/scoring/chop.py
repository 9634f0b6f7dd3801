"""A ctm reference and a ctm hypothesis chopped into utterances as sclite chops them (`sclite -r ref.ctm ctm -h
hyp.ctm ctm`, sctk's ctm2ctm.c: align_ctm_to_ctm and chop_WTOKE_2). Neither file has segments, so each channel's
words, the reference's and the hypothesis's, are cut where a gap in the reference's words overlaps a gap in the
hypothesis's, within about 50 words of the chunk's start (100, 200, ... where no such gap is found), and each chunk
is aligned as an utterance, `<file>-<channel>-<n>` (from 0000), whose speaker is `<file>-<channel>`. The word
alignment of each chunk is sclite's default, or, with its -T, by the words' times (alternations.align's `times`).

Two sclites chop differently (CHOPS). Every released one (2.4.12 and before; Debian's 2.4.10) reads, at one step of
its search, a hypothesis word's duration from the reference's table, at the hypothesis word's place in its own
(ctm2ctm.c line 489): which duration that is depends on how both files fill sclite's tables, conversation by
conversation (fillmrks.c), and `_Table` follows them. SCTK's master corrected the read in commit 82955db (2022,
not yet released), which moves some cuts and can change the counts.

The chop reads both files as sclite reads them, in their order (a ctm is written by file, channel and time), the
reference's alternations (<ALT_BEGIN> blocks, whose mark lines' `*` times are 0 s to it) among its words, and at
its edges the word before a chunk as sclite's table holds it. Where sclite stops, here a channel's words are paired
by file and channel: a file or channel of the reference the hypothesis has no word of is one utterance, every word
of it deleted, and a file's third channel is scored as its first two are (sclite leaves it out). Where the
reference runs out 50 or more hypothesis words before a channel's end, sclite names their chunk after the next
channel's first reference word; here after its own channel. File and channel names match as sclite matches them,
whatever their case. A hypothesis's alternations are refused: sclite's chop cuts through them."""
from __future__ import annotations

from itertools import chain, groupby
from typing import NamedTuple

from pipeline.errors import InputError
from pipeline.scoring import glm
from pipeline.scoring.lenient import NOTHING
from pipeline.scoring.stm import Cut, counted, csrfilt_lines, ctm_lines, ctm_words

FIRST_REACH = 50  # chop_WTOKE_2's max_words, doubled until a cut is found
NO_END = 999999.99  # the end of the gap after a channel's last word
TABLE_SIZE = 5000  # the words a table first holds (wtokeini.c), grown by TABLE_GROWTH for a longer conversation
TABLE_GROWTH = 1.3
CHOPS = ("released", "master")  # as every released sclite chops (2.4.12 and before), as SCTK's master does


def comparable(chop: str, timed: bool) -> str:
    """What the counts of a ctm reference chopped as `chop` chops it stand beside; `timed`: aligned by time."""
    aligned = ", each chunk aligned by its words' times" if timed else ""
    if chop == "released":
        return (f"each ctm channel chopped into utterances as every released sclite (2.4.12 and before) chops it"
                f"{aligned}: comparable with their `sclite -r ref.ctm ctm -h hyp.ctm ctm{' -T' * timed}`")
    return (f"each ctm channel chopped into utterances as SCTK's master chops it since commit 82955db, not yet "
            f"released{aligned}: not comparable with a released sclite's on the same files, whose utterances differ")


class Entry(NamedTuple):
    """A ctm line as sclite's table holds it: a word, or a mark of an alternation."""
    start: float
    duration: float
    alternate: bool  # a mark, or a word inside a block
    line: int = -1  # its index among the file's lines; -1: a place of the table that never held one
    file: str = ""  # casefolded, as sclite compares names
    channel: str = ""


NOTHING_HELD = Entry(0.0, 0.0, False)


def _atof(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0  # the `*` of a mark line; a word line's times are checked where its words are read


def _entries(lines: list[tuple[int, list[str]]]) -> list[Entry]:
    out, alternate = [], False
    for k, (_, fields) in enumerate(lines):
        mark = fields[4].upper()
        alternate = alternate and lines[k - 1][1][4].upper() != "<ALT_END>" or mark.startswith("<ALT")
        out.append(Entry(_atof(fields[2]), _atof(fields[3]), alternate, k, fields[0].casefold(),
                         fields[1].casefold()))
    return out


class _Table:
    """A ctm's entries as sclite's table (WTOKE_STR1) holds them while it scores one conversation (file) after
    another (fillmrks.c): places from 1; a conversation loaded whole, what is left of the table moved down to place
    1 first, the places after the last loaded keeping what they held; the table grown where one conversation fills
    it. `slots`: the entry each place holds, where it ever held one."""

    def __init__(self, held: list[Entry]):
        self.held, self.slots = held, [-1]
        self.read, self.start, self.n, self.size, self.eof = 0, 1, 0, TABLE_SIZE, False  # sclite's s, n, max

    def __getitem__(self, place: int) -> Entry:
        slot = self.slots[place] if place < len(self.slots) else -1
        return self.held[slot] if slot >= 0 else NOTHING_HELD

    def _end(self, start: int, by_channel: bool = False) -> int:
        """The last place of the conversation, or of its channel, at `start` (locate_boundary)."""
        if start >= self.n:
            return self.n
        first = self[start]
        return next((w - 1 for w in range(start, self.n + 1) if self[w].file != first.file
                     or by_channel and self[w].channel != first.channel), self.n)

    def _load(self) -> None:
        """fill_mark_struct: what is left moved down to place 1, then lines read until the table is full."""
        kept = self.slots[self.start:self.n + 1]
        self.slots[1:len(kept) + 1] = kept
        self.n, self.start = len(kept), 1
        while self.n < self.size - 1:
            if self.read == len(self.held):
                self.eof = True
                return
            self.n += 1
            if self.n < len(self.slots):
                self.slots[self.n] = self.read
            else:
                self.slots.append(self.read)
            self.read += 1
            if self.n >= self.size - 1 and self[self.n].file == self[1].file:
                del self.slots[self.n + 1:]  # a new table: nothing after the last loaded
                self.size = int(self.size * TABLE_GROWTH)

    def channels(self) -> list[tuple[int, int]]:
        """The next conversation's channels (first and last place of each), loaded whole first."""
        while self._end(self.start) == self.n and not self.eof:
            self._load()
        end, out = self._end(self.start), []
        while self.start <= end:
            last = min(self._end(self.start, by_channel=True), end)
            out.append((self.start, last))
            self.start = last + 1
        return out


def _overlap(a1: float, a2: float, b1: float, b2: float) -> float:
    """sctk's overlap(): the time two spans share, below 0 where they share none; as written, its cases 1 and 2
    are always overruled by 3 and 4."""
    if a1 < b1:
        return a2 - b1 if a2 < b2 else b2 - b1
    return a2 - a1 if a2 < b2 else b2 - a1


def _apart(r: Entry, h: Entry, duration: float | None = None) -> bool:
    """`duration`: the one read for h, where it is not its own."""
    end = h.start + (h.duration if duration is None else duration)
    return _overlap(r.start, r.start + r.duration, h.start, end) < 0.0


class _Chopper:
    """chop_WTOKE_2 on one channel of a conversation: `ref` and `hyp` the tables, the channel at r_last and h_last
    at the end; `misread`: whether the hypothesis word's duration is read at its place in the reference's table at
    the step that a released sclite reads it so."""

    def __init__(self, ref: _Table, hyp: _Table, r_last: int, h_last: int, misread: bool):
        self.ref, self.hyp, self.r_last, self.h_last, self.misread = ref, hyp, r_last, h_last, misread

    def _back(self, r: int, r0: int) -> tuple[int, bool]:
        """r back past the reference's alternations, and whether it passed one."""
        passed = False
        while r >= r0 and self.ref[r].alternate:
            r, passed = r - 1, True
        return r, passed

    def chop(self, r0: int, h0: int, reach: int) -> tuple[int, int] | None:
        """The last place of each side of the chunk that starts at r0 and h0 (one before it, where that side has
        none); None where there is none within `reach` words."""
        R, H, r_last, h_last = self.ref, self.hyp, self.r_last, self.h_last
        if r_last - r0 < reach and h_last - h0 < reach:
            return r_last, h_last
        r, _ = self._back(min(r0 + reach, r_last), r0)
        h = min(h0 + reach, h_last)
        skipped = True
        while skipped:  # the ends brought together, each side back to a word the other's overlaps
            skipped = False
            if R[r].start > H[h].start:
                while not skipped and r >= r0 and R[r].start > H[h].start and _apart(R[r], H[h]):
                    r, skipped = self._back(r - 1, r0)
            elif R[r].start < H[h].start:
                while h >= h0 and R[r].start < H[h].start and _apart(R[r], H[h]):
                    h -= 1
        while r > r0 and h > h0:  # back, until the gaps after the two ends overlap
            r_gap = R[r].start + R[r].duration, NO_END if r == r_last else R[r + 1].start
            h_gap = H[h].start + H[h].duration, NO_END if h == h_last else H[h + 1].start
            if _overlap(*r_gap, *h_gap) >= 0.0:
                return r, h
            skipped = True
            while skipped:
                skipped = False
                if R[r].start > H[h].start:
                    if r > r0:
                        r, skipped = self._back(r - 1, r0)
                    while not skipped and h >= h0 and R[r].start < H[h].start and _apart(R[r], H[h]):
                        h -= 1
                else:
                    if h > h0:
                        h -= 1
                    read = R[h].duration if self.misread else None
                    while not skipped and r >= r0 and R[r].start > H[h].start and _apart(R[r], H[h], read):
                        r, skipped = self._back(r - 1, r0)
        return (r, h) if r > r0 or h > h0 else None

    def chunks(self, r0: int, h0: int) -> list[tuple[int, int, int, int]]:
        """Each chunk's first and last place of each side, as align_ctm_to_ctm takes them one after another."""
        out = []
        while r0 <= self.r_last or h0 <= self.h_last:
            reach = FIRST_REACH
            while (found := self.chop(r0, h0, reach)) is None:
                reach *= 2
            out.append((r0, found[0], h0, found[1]))
            r0, h0 = found[0] + 1, found[1] + 1
        return out


def _runs(held: list[Entry], path: str, flag: str) -> list[str]:
    """The files of a ctm in its order; an InputError where a file's lines are not together, which sclite would
    read as two conversations."""
    runs = [file for file, _ in groupby(e.file for e in held)]
    twice = next((f for f in runs if runs.count(f) > 1), None)
    if twice is not None:
        raise InputError(f"{flag} {path}: the lines of file {twice!r} are not together, and sclite reads each run "
                         "of them as a conversation of its own; sort the ctm by file, channel and time")
    return runs


def _channels(table: _Table, lines: list[tuple[int, list[str]]], path: str,
              flag: str) -> list[tuple[str, tuple[int, int]]]:
    """The next conversation's channels, each by its name: its first and last place in the table."""
    out = [(table[first].channel, (first, last)) for first, last in table.channels()]
    names = [name for name, _ in out]
    twice = next((k for k, name in enumerate(names) if name in names[:k]), None)
    if twice is not None:
        fields = lines[table[out[twice][1][0]].line][1]
        raise InputError(f"{flag} {path}: the lines of file {fields[0]!r} channel {fields[1]!r} are not together, "
                         "and sclite reads each run of them as a channel of its own; sort the ctm by file, channel "
                         "and time")
    return out


def _times(lines: list[tuple[int, list[str]]]) -> list[tuple[float, float]]:
    """The (start, end) of each word of some of a ctm's lines, as sclite's WORD holds them (T1, T2)."""
    out = []
    for _, fields in lines:
        if not fields[4].upper().startswith("<ALT") and fields[4] != NOTHING:
            start = float(fields[2])
            out.append((start, start + float(fields[3])))
    return out


def utterances(ref_path: str, hyp_path: str, chop: str = CHOPS[0], timed: bool = False,
               rules: tuple[glm.Glm, glm.Glm] | None = None) -> Cut:
    """Each chunk's utterance (id, reference, hypothesis), conversation by conversation and channel by channel in
    the reference's order, chopped as `chop` (CHOPS) chops; `timed`: with its words' times, to align by them (sclite
    -T); `rules`: a GLM's for each file, the reference's and the hypothesis's, through which the chop reads them as
    csrfilt.sh -i ctm writes them. An InputError where the hypothesis has an alternation, or words of a file or
    channel the reference has none of, or its files in another order than the reference's."""
    ref_lines, hyp_lines = ctm_lines(ref_path, "--ref"), ctm_lines(hyp_path, "--hyp")
    if not ref_lines:
        raise InputError(f"--ref {ref_path}: no word; a ctm line is `file channel start duration word [confidence]`")
    if rules is not None:
        ref_lines, hyp_lines = csrfilt_lines(ref_lines, ref_path, rules[0]), csrfilt_lines(hyp_lines, hyp_path,
                                                                                             rules[1])
    said, heard = _entries(ref_lines), _entries(hyp_lines)
    block = next((k for k, e in enumerate(heard) if e.alternate), None)
    if block is not None:
        raise InputError(f"--hyp {hyp_path}: line {hyp_lines[block][0]}: an alternation"
                         + (", as the GLM writes it" if rules else "") + ", which sclite's chop of a ctm reference "
                         "cuts through; " + ("take the GLM's rules that write alternations into hypotheses (its "
                                             "`hyp` section) out of it, or leave --glm out" if rules else
                                             "write the hypothesis's words without alternations"))
    files, heard_files = _runs(said, ref_path, "--ref"), _runs(heard, hyp_path, "--hyp")
    stray = next((f for f in heard_files if f not in files), None)
    if stray is not None or [f for f in files if f in heard_files] != heard_files:
        raise InputError(f"--hyp {hyp_path}: " + (f"words of file {stray!r}, of which the reference {ref_path} has "
                                                  "no word; give the reference's words of every file it transcribes"
                                                  if stray else f"its files are not in {ref_path}'s order, in "
                                                  "which sclite reads both; sort both by file, channel and time"))
    ref, hyp = _Table(said), _Table(heard)
    out, confidences, channels, silent, begins, unconfident, times = [], {}, 0, 0, [], 0, {}
    for file in files:
        ours = _channels(ref, ref_lines, ref_path, "--ref")
        theirs = dict(_channels(hyp, hyp_lines, hyp_path, "--hyp")) if file in heard_files else {}
        stray = next((c for c in theirs if c not in dict(ours)), None)
        if stray is not None:
            fields = hyp_lines[hyp[theirs[stray][0]].line][1]
            raise InputError(f"--hyp {hyp_path}: words of file {fields[0]!r} channel {fields[1]!r}, of which the "
                             f"reference {ref_path} has no word; give the reference's words of every channel it "
                             "transcribes")
        for name, (r0, r_last) in ours:
            channels += 1
            fields = ref_lines[ref[r0].line][1]
            if name not in theirs:
                silent += 1
                pieces = [(r0, r_last, 0, -1)]
            else:
                h0, h_last = theirs[name]
                pieces = _Chopper(ref, hyp, r_last, h_last, chop == "released").chunks(r0, h0)
            for n, (r_first, r_end, h_first, h_end) in enumerate(pieces):
                uid = f"{fields[0]}-{fields[1]}-{n:04d}"
                r_lines = [ref_lines[ref[p].line] for p in range(r_first, r_end + 1)]
                h_lines = [hyp_lines[hyp[p].line] for p in range(h_first, h_end + 1)]
                r_words, h_words = ctm_words(r_lines, ref_path, "--ref"), ctm_words(h_lines, hyp_path)
                if timed:
                    times[uid] = _times(r_lines), _times(h_lines)
                out.append((uid, " ".join(w.word for w in r_words), " ".join(w.word for w in h_words)))
                begins.append(ref_lines[ref[r_first].line][0] if r_first <= r_end else 0)
                confidences[uid] = tuple(chain.from_iterable(w.confidences for w in h_words))
                unconfident += sum(w.unconfident for w in h_words)
    known = any(c is not None for given in confidences.values() for c in given)
    return Cut(utterances=out, channels=channels, ignored_segments=0, ignored_words=0,
               confidences=confidences if known and not unconfident else {},
               unconfident=unconfident if known else 0, segments=tuple(begins), unheard=silent, timed=times)


def line(cut: Cut, ctm: str, chop: str) -> str:
    said = f"{ctm}: {counted(len(cut.utterances), 'chunk')} of {counted(cut.channels, 'channel')} scored, chopped " \
           f"as {'every released sclite' if chop == 'released' else 'SCTK master'} chops a ctm reference"
    if cut.unheard:
        said += (f"; {counted(cut.unheard, 'channel')} of the reference without a word of it, each scored as one "
                 "chunk, every word deleted (sclite stops there)")
    return said
