"""NIST's hubscr.pl, language by language (its `-l`): the flags it gives csrfilt.sh and sclite, and the Arabic filters
it can run before csrfilt.sh, each as sctk writes it (hubscr.pl's FilterFile and RunScoring, hamzaNorm.pl,
tanweenFilt.pl).

- csrfilt.sh upper-cases a-z, but not with `-s` (hubscr.pl's Arabic and Italian). With `-e` (Spanish, German,
  Italian) it upper-cases Latin-1's bytes à-ÿ too (`tr/\\340-\\377/\\300-\\337/`, so ÿ becomes ß and ÷ ×): NIST's
  texts in those languages were Latin-1. Here the texts are UTF-8 and the step is taken on the characters, as it
  is on a Latin-1 file; on UTF-8 bytes csrfilt.sh would leave à-þ as they are and break characters of three bytes.
- sclite compares case in Arabic alone (`-s`), as `--normalize none` does.
- hamzaNorm.pl (`-H`) makes آ, أ and إ at a word's start (after a space, or the text's start) a bare ا;
  tanweenFilt.pl -a (`-T`) deletes every tanween (fathatan, dammatan, kasratan). Both run before csrfilt.sh, so the
  GLM sees their output. One departure: a word after a tab in an stm's text, which hamzaNorm.pl, reading the line
  as written, does not take for a word's start; here the stm's words are read apart first.
- Not done here, and said where a scoring would differ: German's compound splitting (acomp.pl, against the LDC
  German lexicon) and Arabic's definite article (def_art.pl, hubscr.pl's default unless -d, against the LDC Arabic
  lexicon). In sctk's def_art.pl the lexicon's article words map to an unset variable, so it changes no word of an
  Arabic-script text; it does round a ctm's start times to 10 ms."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from pipeline.scoring import language


@dataclass(frozen=True)
class Language:
    name: str  # hubscr.pl's -l
    upcase: bool = True  # csrfilt.sh without -s
    extended: bool = False  # csrfilt.sh -e
    case_sensitive: bool = False  # sclite -s
    options: str = ""  # hubscr.pl's options that leave out what is not done here, where some do
    left_out: str = ""  # hubscr.pl's step for this language that is not taken here, where no option leaves it out

    @property
    def csrfilt(self) -> str:
        return " ".join(("-s",) * (not self.upcase) + ("-e",) * self.extended + ("-dh",))


LANGUAGES = {  # by the ISO 639-1 code score's --language takes
    "en": Language("english"),
    "zh": Language("mandarin"),
    "es": Language("spanish", extended=True),
    "de": Language("german", extended=True, left_out="hubscr.pl's German compound splitting (acomp.pl, with the "
                                                     "LDC German lexicon) is not done here"),
    "it": Language("italian", upcase=False, extended=True),
    "ar": Language("arabic", upcase=False, case_sensitive=True, options=" -d"),  # def_art.pl not run
}
OTHERWISE = LANGUAGES["en"]  # csrfilt.sh's flags where hubscr.pl has no -l for the language


def known(lang: str) -> bool:
    """Whether hubscr.pl has a -l for the language of `lang`, a code or a tag (`es-MX`)."""
    return language.base(lang) in LANGUAGES


def of(lang: str) -> Language:
    return LANGUAGES.get(language.base(lang), OTHERWISE)


_HAMZA = re.compile(" [\u0622\u0623\u0625\u0627]")  # alef with madda, hamza above, hamza below, and bare alef
_TANWEEN = re.compile("[\u064b\u064c\u064d]")  # fathatan, dammatan, kasratan


def hamza(text: str) -> str:
    """hamzaNorm.pl's normalize(): an alef with a hamza or a madda that starts a word made a bare alef."""
    return _HAMZA.sub(" \u0627", " " + text)[1:]


def tanween(text: str) -> str:
    """tanweenFilt.pl -a's normalize(): every tanween deleted, wherever it is in a word."""
    return _TANWEEN.sub("", text)


@dataclass(frozen=True)
class Filter:
    """One of hubscr.pl's filters before csrfilt.sh: the flag that asks for it here, and hubscr.pl's."""
    flag: str
    hubscr: str
    script: str
    step: Callable[[str], str]
    does: str


FILTERS = (Filter("--hamza-norm", "-H", "hamzaNorm.pl", hamza, "آ, أ and إ at a word's start made ا"),
           Filter("--tanween-filter", "-T", "tanweenFilt.pl -a", tanween,
                  "every tanween (fathatan, dammatan, kasratan) deleted"))
ARABIC = "ar"  # the language the filters are for, as hubscr.pl allows them for Arabic alone


def arabic(lang: str) -> bool:
    return language.base(lang) == ARABIC
