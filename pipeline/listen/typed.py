"""Typed answers scored as an ASR's output is: what a listener typed (or an engine heard) against the sentence, by
the tool's own aligner (scoring/align.py), under the listener normalizer, rule by rule:

1. Unicode NFKC (a full-width or composed letter typed on another keyboard is the same letter);
2. lowercase;
3. apostrophes deleted, straight or curly: "king's" and "kings" are one answer, as a listener hears them;
4. hyphens and dashes split words: "well-known" is "well known";
5. every other punctuation mark and symbol a space;
6. numbers as digits: Whisper's English number normalizer ("twenty one" is "21", "nineteen eighty four" "1984"),
   then a lone number word from zero to twenty as its digits ("one" and "1" are the same answer);
7. compounds against the sentence: a typed word that is two adjacent words of the sentence written together
   ("everyday" for "every day") is split into them, and two typed words that are one word of the sentence split
   ("some times" for "sometimes") are joined.

Two figures per answer. **Strict**: the alignment of the normalized texts. **Tolerant**: the same alignment, with a
substitution counted right when the typed word is
- a *homophone* of the sentence's word: the two share a pronunciation in the CMU Pronouncing Dictionary (stress
  marks ignored; PocketSphinx's copy, installed with it), "knight" for "night";
- or an obvious *misspelling* of it: the typed word is no word of that dictionary, both have at least four letters,
  they start with the same letter, and they are one edit apart (an insertion, deletion, substitution or the swap of
  two neighbouring letters; two for words of eight letters or more): "recieve" for "receive", never "bat" for
  "bad" (a word of its own).
Each answer keeps which rule made which word right (`Scored.rules`), so a team can audit it.

That is English. A test of runs in another language (`lang`, the runs' own) scores in the unit and under the
normalizer its runs were scored in (scoring/language.py): characters for Chinese, Japanese, Thai and the others
written without spaces (ASCII words whole), with full-width forms folded and traditional Chinese made simplified
on both sides (the `basic` normalizer); words elsewhere, with rule 7 (compounds). Rule 6 and the tolerant rules
above need English's number words and pronouncing dictionary. Chinese has a tolerant rule of its own: a
substituted character that shares a reading with the sentence's, tone included (pypinyin), counts right, as
Blizzard's Mandarin tests scored pinyin with tones, since a listener's input method offers every character of the
syllable heard (散布 for 散步). Japanese has one too, since its listeners write one word in kana or in kanji, as
their input method offers (今日 or きょう, 良い or よい, 会う or 合う): a stretch of errors, widened to whole words
on both sides, counts right when the sentence's characters and the typed ones share a reading (MeCab with UniDic,
the `ja` extra: each side's pronunciation in its sentence, or under one of its likeliest analyses alone, so that
私 is ワタクシ or ワタシ). Elsewhere the tolerant figure is the strict one."""
from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from pipeline.core import japanese
from pipeline.errors import ConfigError
from pipeline.scoring import align, language, normalize
from pipeline.scoring.align import Alignment, Op

SMALL = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
         "seventeen eighteen nineteen twenty").split()
HOMOPHONE, MISSPELLING, READING = "homophone", "misspelling", "reading"
ENGLISH, CHINESE, JAPANESE = "en", "zh", "ja"
ALTERNATIVES = 3  # the likeliest analyses of a stretch of Japanese whose readings it may have, beside its own
MIN_MISSPELT = 4  # letters in each word before a misspelling can be forgiven
LONG = 8  # letters from which two edits are forgiven


@functools.cache
def _numbers():
    """Whisper's English number normalizer, and the words it acts on ("and" alone is no number)."""
    from whisper.normalizers.english import EnglishNumberNormalizer

    normalizer = EnglishNumberNormalizer()
    return normalizer, frozenset(normalizer.words) - {"and"}


APOSTROPHES = re.compile("['\u2018\u2019\u02bc]")
DASHES = re.compile(r"[\-\u2010-\u2015\u2212]")


@functools.lru_cache(maxsize=65536)  # a sentence is scored against every listener's answer and every engine's
def _words(text: str, lang: str) -> tuple[str, ...]:
    if not english(lang):
        return tuple(normalize.for_language("basic", lang).reference(text).split())
    text = DASHES.sub(" ", APOSTROPHES.sub("", unicodedata.normalize("NFKC", text).lower()))
    tokens = "".join(" " if unicodedata.category(c)[0] in "PS" else c for c in text).split()
    normalizer, numeric = _numbers()
    if any(t in numeric or not t.isalpha() for t in tokens):  # the normalizer is most of the cost: where it acts
        tokens = normalizer(" ".join(tokens)).split()
    return tuple(str(SMALL.index(w)) if w in SMALL else w for w in tokens)


def words(text: str, lang: str = ENGLISH) -> list[str]:
    """Rules 1-6: the text as the listener normalizer's words (in `lang`: its unit), before the compounds are
    matched."""
    return list(_words(text, lang))


def english(lang: str) -> bool:
    return language.base(lang) == ENGLISH


def compounds(ref: list[str], typed: list[str]) -> list[str]:
    """Rule 7: the typed words with compounds matched to the sentence's words."""
    pairs = {a + b: (a, b) for a, b in zip(ref, ref[1:])}
    singles = set(ref)
    out: list[str] = []
    i = 0
    while i < len(typed):
        w = typed[i]
        if i + 1 < len(typed) and w + typed[i + 1] in singles and w not in singles:
            out.append(w + typed[i + 1])
            i += 2
            continue
        out.extend(pairs[w] if w in pairs and w not in singles else (w,))
        i += 1
    return out


@functools.cache
def pronunciations() -> dict[str, frozenset[str]]:
    """Each word of the CMU Pronouncing Dictionary (PocketSphinx's copy): its pronunciations, stress marks off."""
    import pocketsphinx

    path = Path(pocketsphinx.get_model_path()) / "en-us" / "cmudict-en-us.dict"
    stress = str.maketrans("", "", "012")
    out: dict[str, set[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        head, _, phones = line.partition(" ")  # a second pronunciation's head is `word(2)`
        if phones:
            out.setdefault(head.split("(", 1)[0], set()).add(phones.strip().translate(stress))
    return {w: frozenset(p) for w, p in out.items()}


def homophones(a: str, b: str) -> bool:
    said = pronunciations()
    return bool(said.get(a, frozenset()) & said.get(b, frozenset()))


def edit_distance(a: str, b: str) -> int:
    """Damerau-Levenshtein (optimal string alignment): a swap of two neighbouring letters is one edit."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[-1][-1]


def misspelt(reference: str, typed: str) -> bool:
    if typed in pronunciations() or min(len(reference), len(typed)) < MIN_MISSPELT or reference[0] != typed[0]:
        return False
    return edit_distance(reference, typed) <= (2 if len(reference) >= LONG else 1)


def forgiven(reference: str, typed: str, lang: str = ENGLISH) -> str | None:
    """The tolerant rule that counts a substituted word (a character, in Chinese) right, if one does."""
    if not english(lang):
        return HOMOPHONE if language.base(lang) == CHINESE and same_pinyin(reference, typed) else None
    if homophones(reference, typed):
        return HOMOPHONE
    if misspelt(reference, typed):
        return MISSPELLING
    return None


@functools.lru_cache(maxsize=65536)
def _readings(character: str) -> frozenset[str]:
    """A Chinese character's readings with their tones; none for anything else (a letter, pinyin typed as such)."""
    from pypinyin import Style, pinyin

    found = pinyin(character, style=Style.TONE3, heteronym=True, neutral_tone_with_five=True, errors="ignore")
    return frozenset(found[0]) if len(character) == 1 and len(found) == 1 else frozenset()


def same_pinyin(reference: str, typed: str) -> bool:
    """Two Chinese characters that share a reading, tone included (any of each one's readings, in pypinyin's
    dictionary): the character a listener's pinyin input method offered for the syllable they heard."""
    return bool(_readings(reference) & _readings(typed))


class Forgiven(NamedTuple):
    """What a tolerant rule counted right: the sentence's word and the typed one (characters, for a reading)."""
    reference: str
    typed: str
    rule: str
    errors: int = 1  # the strict errors it forgives: a reading's characters need not be as many on each side


@dataclass(frozen=True)
class Parsed:
    """Japanese units (characters; ASCII words whole) read by MeCab: where its words begin and end, in units, and
    each word's characters and pronunciation."""
    units: tuple[str, ...]
    edges: frozenset[int]  # units before which a word begins (and the end)
    words: tuple[tuple[int, int, str], ...]  # each word's first character, its end, and its pronunciation

    def reading(self, start: int, end: int) -> str:
        """The units start…end (word edges both) as they read in the sentence."""
        first, last = len("".join(self.units[:start])), len("".join(self.units[:end]))
        return "".join(said for a, b, said in self.words if a >= first and b <= last).translate(japanese.KATAKANA)

    def readings(self, start: int, end: int) -> frozenset[str]:
        """Their reading in the sentence, and under each of their likeliest analyses alone."""
        alone = japanese.readings("".join(self.units[start:end]), ALTERNATIVES)
        return frozenset(r.translate(japanese.KATAKANA) for r in [self.reading(start, end), *alone])


def require(lang: str) -> None:
    """Refuses a language whose rules need what is not installed, naming the fix: Japanese's readings."""
    if language.base(lang) != JAPANESE:
        return
    try:
        japanese.reader()
    except ImportError:
        raise ConfigError(f"a transcription test in Japanese counts kana typed for kanji right through MeCab with "
                          f"UniDic, which are not installed: {japanese.FIX}") from None


@functools.lru_cache(maxsize=65536)
def parsed(units: tuple[str, ...]) -> Parsed:
    require(JAPANESE)
    unit_at = {end: i + 1 for i, end in enumerate(itertools.accumulate(map(len, units)))}  # a character → units
    found, edges, at = [], {0, len(units)}, 0
    for _, surface, said in japanese.words("".join(units)):
        found.append((at, at + len(surface), said))
        at += len(surface)
        if at in unit_at:
            edges.add(unit_at[at])
    return Parsed(units, frozenset(edges), tuple(found))


def same_readings(ref: list[str], typed: list[str], ops) -> list[Forgiven]:
    """Japanese: each stretch of errors, widened over hits to whole words of both sentences, that reads as the
    sentence's characters do (`Parsed.readings` of each side share one) counts right."""
    at = [(0, 0)]
    for op, _, _ in ops:
        i, j = at[-1]
        at.append((i + (op is not Op.INSERTION), j + (op is not Op.DELETION)))
    said, heard = parsed(tuple(ref)), parsed(tuple(typed))
    whole = [i in said.edges and j in heard.edges for i, j in at]
    stretches: list[tuple[int, int]] = []
    for k, (op, _, _) in enumerate(ops):
        if op is Op.HIT or (stretches and stretches[-1][1] > k):
            continue
        start, end = k, k + 1
        while end < len(ops) and ops[end][0] is not Op.HIT:
            end += 1
        while True:
            before = start, end
            while not whole[start]:
                start -= 1
            while not whole[end]:
                end += 1
            while stretches and stretches[-1][1] > start:  # widened into the stretch before: one stretch
                start = min(start, stretches.pop()[0])
            if (start, end) == before:
                break
        stretches.append((start, end))
    out = []
    for start, end in stretches:
        (i0, j0), (i1, j1) = at[start], at[end]
        if i1 > i0 and j1 > j0 and said.readings(i0, i1) & heard.readings(j0, j1):
            errors = sum(op is not Op.HIT for op, _, _ in ops[start:end])
            out.append(Forgiven("".join(ref[i0:i1]), "".join(typed[j0:j1]), READING, errors))
    return out


@dataclass(frozen=True)
class Scored:
    """One answer against its sentence: both alignments and the rules that made words right."""
    reference: list[str]  # the sentence's words, normalized
    typed: list[str]  # the answer's, normalized and matched for compounds
    strict: Alignment
    rules: list[Forgiven] = field(default_factory=list)

    @property
    def tolerant_errors(self) -> int:
        return self.strict.errors - sum(f.errors for f in self.rules)

    @property
    def tolerant_wer(self) -> float | None:
        return self.tolerant_errors / self.strict.ref_words if self.strict.ref_words else None


def score(reference: str, typed: str, lang: str = ENGLISH) -> Scored:
    """An answer (or an engine's transcript) against its sentence, in the test's language."""
    ref = words(reference, lang)
    hyp = compounds(ref, words(typed, lang))
    strict = align.align(ref, hyp)
    if language.base(lang) == JAPANESE:
        return Scored(ref, hyp, strict, same_readings(ref, hyp, strict.ops))
    rules = [Forgiven(r, h, rule) for op, r, h in strict.ops
             if op is Op.SUBSTITUTION and (rule := forgiven(r, h, lang))]
    return Scored(ref, hyp, strict, rules)


def surprisal(reference: str, normalized: str, bits: list[float]) -> list[float]:
    """Each of the sentence's words (as `words` gives them) with its LM surprisal, from a run's scoring: `bits` one
    per word of `normalized`, the reference under the run's normalizer. A run word this normalizer splits gives
    each piece its surprisal; where the two normalizers do not give the same words (a number written across
    words), none."""
    out, parts = [], []
    for word, b in zip(normalized.split(), bits):
        pieces = words(word)
        parts += pieces
        out += [b] * len(pieces)
    return out if bits and len(bits) == len(normalized.split()) and parts == words(reference) else []
