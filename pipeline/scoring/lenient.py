"""sclite's lenient scoring of conversational references, as NIST's hubscr.pl asks for it (`sclite -D -F`), which is
how Switchboard and CallHome numbers are made:

- -D: a word in parentheses, `(uh)`, is optionally deletable: left out, it is correct (over a blank), and so is one
  the hypothesis writes with nothing across (it then adds a word to #Wrd); said, it is its word without parentheses;
- -F: a fragment, `th-` or `-ing` (with -D, `(th-)` too), is correct against any word it begins or ends.

Each as sctk does it: which words are marked (align.c's decode_opt_del and decode_fragment), their weights (word.c's
wwd_WORD: leaving out an optional word costs 2, other words 3, so the alignment prefers it) and which words are
equal (word.c's equal_WORD2, the reference's word looked at first). Only texts that keep the marks can be scored so:
those of the `none` and `sclite` normalizers, which strip no parenthesis or hyphen."""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

NOTHING = "@"  # an alternation's way of saying nothing (scoring/alternations.py)
_F = np.float32  # sclite's costs are C floats: a tie there is a tie in single precision
PASSING, OPTIONAL_GAP, GAP, NULLS, EQUAL, UNEQUAL = (_F(x) for x in (0.001, 2.0, 3.0, 1.0, 0.0, 4.0))
KEEPING = ("none", "sclite")  # the normalizers that leave the marks in the texts
OPTIONS = ("--optional-words", "--fragments")  # `score`'s flags for -D and -F


class Word(NamedTuple):
    value: str  # as written
    text: str  # what it is compared by: an optional word's without its parentheses
    optional: bool  # -D: in parentheses
    fragment: bool  # -F: begins or ends with a hyphen


@dataclass(frozen=True)
class Lenient:
    """Which of sclite's lenient rules a scoring follows (neither: sclite's plain scoring)."""
    optional: bool = False  # sclite -D
    fragments: bool = False  # sclite -F

    def __bool__(self) -> bool:
        return self.optional or self.fragments

    @property
    def flags(self) -> str:
        return self.names()

    def names(self, of: tuple[str, str] = ("-D", "-F"), joiner: str = " ") -> str:
        """The rules followed, each by its name in `of` (sclite's flags, or `score`'s: OPTIONS)."""
        return joiner.join(name for name, on in zip(of, (self.optional, self.fragments)) if on)

    def held(self, *texts: str) -> bool:
        """Whether any of the texts may hold a word these rules score otherwise (a look at its characters)."""
        return any((self.optional and "(" in t) or (self.fragments and "-" in t) for t in texts)

    def word(self, value: str) -> Word:
        optional = self.optional and len(value) > 1 and value[0] == "(" and value[-1] == ")"
        fragment = self.fragments and (value[0] == "-" or value[-1] == "-" or (optional and value[-2] == "-"))
        return Word(value, value[1:-1] if optional else value, optional, fragment)

    @staticmethod
    def same(ref: Word, hyp: Word) -> bool:
        """sctk's equal_WORD2: a fragment, on either side, matches the words it begins or ends."""
        x, y = ref.text, hyp.text
        if ref.fragment or hyp.fragment:
            if len(x) > 1 and x[0] == "-":
                return y.endswith(x[1:])
            if len(x) > 1 and x[-1] == "-":
                return y.startswith(x[:-1])
            if len(y) > 1 and y[0] == "-":
                return x.endswith(y[1:])
            if len(y) > 1 and y[-1] == "-":
                return x.startswith(y[:-1])
        return x == y

    @classmethod
    def cost(cls, ref: Word | None, hyp: Word | None) -> np.float32:
        """sctk's wwd_WORD, the weight of a step: None is the gap."""
        if hyp is None:
            return PASSING if ref.value == NOTHING else OPTIONAL_GAP if ref.optional else GAP
        if ref is None:
            return PASSING if hyp.value == NOTHING else OPTIONAL_GAP if hyp.optional else GAP
        if ref.value == NOTHING and hyp.value == NOTHING:
            return NULLS
        return EQUAL if cls.same(ref, hyp) else UNEQUAL


PLAIN = Lenient()
BOTH = Lenient(optional=True, fragments=True)


def marked(text: str) -> tuple[int, int]:
    """How many of a text's words are in parentheses, and how many are fragments, as sclite -D -F would read them (a
    lone `-`, which sctk marks too, is equal to no other word all the same, and is not counted)."""
    if not BOTH.held(text):  # most references: no word to look at
        return 0, 0
    words = [BOTH.word(w) for w in text.split()]
    return sum(w.optional for w in words), sum(w.fragment and len(w.value) > 1 for w in words)
