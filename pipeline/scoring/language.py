"""The unit an error rate counts, by language: characters for languages written without spaces between words, words
elsewhere. A WER of Chinese counts a whole sentence as one "word" wherever no punctuation splits it, so its figures
mean nothing; the field scores it by characters (CER: seed-tts-eval's test-zh, CV3-Eval's ja and ko), and a rate's
name says which unit it counts.

Three ways to cut a text into characters:
- `characters`: every character but spaces is a unit, letters of embedded English included (seed-tts-eval's
  `" ".join([x for x in text])`, whose spaces jiwer then drops);
- `characters_and_ascii_words` (this tool's own, for mixed Chinese–English text, after a normalizer that strips
  punctuation): a run of ASCII letters, digits and apostrophes stays one word, and every other character is a unit
  with its combining marks (a Thai vowel sign or tone mark stays on its consonant: a mark alone is no character);
- `characters_and_ascii_runs` (sclite's `-c NOASCII`): a run of printable ASCII, punctuation and all (`GPT-4`,
  `3.5`, `(<hes>)`), stays one unit, and every other character is a unit with its combining marks; `Characters`
  cuts so with sclite's -D and `-c DH` as well.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from pipeline.scoring.lenient import Lenient

# ISO 639-1 codes (and Whisper's "yue") of languages written without spaces between words
CHARACTER_LANGUAGES = {"zh": "Chinese", "yue": "Cantonese", "ja": "Japanese", "th": "Thai", "lo": "Lao",
                       "km": "Khmer", "my": "Burmese", "bo": "Tibetan"}
# ISO 639-3 codes a voice declares where the tool, as Whisper, names the language by its ISO 639-1 code
VOICE_CODES = {"cmn": "zh"}
CHARACTER, WORD = "character", "word"
RATE = {CHARACTER: "CER", WORD: "WER"}
# languages a recipe's normalizer scores by characters beyond this tool's list: CV3-Eval's run_wer.py cuts
# `lang[-2:] in ["zh", "ja", "ko"]` into characters, Korean too (a language the recipe does not score keeps the
# tool's unit: its number compares with nothing of the recipe's, and a word of Thai would be its whole sentence)
RECIPE_CHARACTERS = {"cv3-eval": frozenset({"ko"})}


def base(language: str) -> str:
    """The language of a tag: "zh-CN", "zh_cn" and "ZH" are "zh"."""
    return re.split(r"[-_]", language.strip().lower(), maxsplit=1)[0]


def same(spoken: str, language: str) -> bool:
    """Whether a voice that declares `spoken` (espeak-ng's cmn, Piper's en_US) speaks `language` (--language)."""
    code = base(spoken)
    return VOICE_CODES.get(code, code) == base(language)


def voice_code(language: str) -> str:
    """The code a voice declares `language` (--language) with: zh is espeak-ng's cmn."""
    code = base(language)
    return next((spoken for spoken, named in VOICE_CODES.items() if named == code), code)


def unit(language: str, normalizer: str = "") -> str:
    """What a rate in `language` counts; `normalizer`: the one that scores it, where a recipe's decides."""
    code = base(language)
    return CHARACTER if code in CHARACTER_LANGUAGES or code in RECIPE_CHARACTERS.get(normalizer, ()) else WORD


def rate_name(language: str, normalizer: str = "") -> str:
    """CER or WER: what a rate in this language is called."""
    return RATE[unit(language, normalizer)]


def characters(text: str) -> str:
    return " ".join("".join(text.split()))  # str.split's whitespace is str.isspace's, and jiwer's \s


_ASCII_WORD = re.compile(r"[A-Za-z0-9']+")
_ASCII_RUN = re.compile(r"[!-~]+")  # sclite's NOASCII: a run of printable ASCII is not cut


def _cut(text: str, whole: re.Pattern) -> str:
    units: list[str] = []
    for piece in text.split():
        at = 0
        for m in whole.finditer(piece):
            units += _clusters(piece[at:m.start()])
            units.append(m.group())
            at = m.end()
        units += _clusters(piece[at:])
    return " ".join(units)


def characters_and_ascii_words(text: str) -> str:
    return _cut(text, _ASCII_WORD)


def characters_and_ascii_runs(text: str) -> str:
    return _cut(text, _ASCII_RUN)


@dataclass(frozen=True)
class Characters:
    """sclite's `-c NOASCII` as its other flags change it (align.c's expand_words_to_chars, which cuts each word
    apart): `optional` (-D), a word in parentheses is cut inside them and each of its units stays optional,
    `(那个)` two units `(那) (个)`, where without -D the parentheses are units of their own; `no_hyphens` (`-c DH`),
    a word's hyphens go before it is cut (`GPT-4` one unit `GPT4`, `TH-` no longer a fragment), a lone `-` kept.
    A text cut once is cut again the same (the scorer cuts what the aligner read). `fragments` (-F): sclite
    takes a fragment (`TH-`) only in a word it leaves whole, and no piece of one it cuts (`UH-好`: `UH-`) for
    one, which the pieces here cannot tell: such a piece is a ValueError, naming the word."""
    optional: bool = False
    no_hyphens: bool = False
    fragments: bool = False

    def __call__(self, text: str) -> str:
        if not (self.optional or self.no_hyphens or self.fragments):
            return characters_and_ascii_runs(text)
        units: list[str] = []
        for word in text.split():
            pieces = self.pieces(word)
            if self.fragments and self._apart(word, pieces):
                _whole_fragments(word, pieces, self.optional)
            units += pieces
        return " ".join(units)

    def _optional(self, word: str) -> bool:
        return self.optional and len(word) > 2 and word[0] == "(" and word[-1] == ")"

    def pieces(self, word: str) -> list[str]:
        """The units sclite cuts a word into."""
        inner = self._optional(word)
        body = word[1:-1] if inner else word
        if self.no_hyphens and len(word) > 1:
            body = body.replace("-", "")
        cut = _cut(body, _ASCII_RUN).split()
        return [f"({u})" for u in cut] if inner else cut

    def apart(self, word: str) -> bool:
        """Whether sclite takes the word apart (and puts its pieces in its place): every optional word, and every
        word whose pieces are not the word itself."""
        return self._apart(word, self.pieces(word))

    def _apart(self, word: str, pieces: list[str]) -> bool:
        return self._optional(word) or pieces != [word]


def _whole_fragments(word: str, pieces: list[str], optional: bool) -> None:
    """A ValueError where a piece of a word cut apart looks like a fragment to scoring/lenient.py (a lone `-`, which
    is equal to no other word either way, aside): sclite would not take it for one."""
    rules = Lenient(optional=optional, fragments=True)
    for piece in pieces:
        if len(piece) > 1 and rules.word(piece).fragment:
            raise ValueError(f"sclite cuts {word!r} apart ({' '.join(pieces)!r}) and takes {piece!r}, a piece of it, "
                             "for no fragment under -F, where this tool cannot tell it from one; give "
                             "--delete-hyphens (sclite -c DH, as hubscr.pl scores Mandarin), or leave --fragments out")


NOASCII = Characters()


def _clusters(text: str) -> list[str]:
    """Each character with the combining marks that follow it."""
    out: list[str] = []
    for c in text:
        if out and unicodedata.category(c).startswith("M"):
            out[-1] += c
        else:
            out.append(c)
    return out
