"""Text normalizers for WER, as small composable functions. Which one ran is recorded with the results.

- `none`: the words exactly as written (split on whitespace), as sclite compares them with `-s`, save for the word
  syntax `sclite` reads.
- `sclite`: the words as sclite reads them (word.c: a word's tags after an unescaped `;` left out, its backslashes
  dropped, so `a\\;s;TAG1` is `a;s`, one closing `*` dropped, and `@` no word) with A-Z made a-z, as sclite
  compares them without `-s` (its default); every other letter keeps its case, as sclite keeps it, with `-e utf-8`
  too ("Über" and "über" differ).
- `basic` (the default): Unicode's NFC form, lowercase, punctuation stripped, apostrophes of words kept ("o'er",
  "king's", "'tis"). NFC, not NFKC: it makes one text of two encodings of the same characters (a precomposed
  "é" and "e" + a combining accent) and leaves alone what a writer chose (a ligature, a superscript, a
  full-width digit), which NFKC would rewrite.
- `whisper`: Whisper's EnglishTextNormalizer. It expands contractions ("'s" → " is", "'d" → " would")
  and drops fillers ("um", "uh"), which rewrites Shakespeare: "king's crown" becomes "king is crown" and
  "lour'd" becomes "lour would". That is why it is not the default here.
- `seed-tts-eval`: seed-tts-eval's English recipe (run_wer.py), so that a WER can stand beside its published
  tables: every character of zhon.hanzi.punctuation and string.punctuation deleted except the ASCII apostrophe
  (so "well-known" becomes "wellknown" and "king’s" becomes "kings"), one pass of "  " → " ", lowercase, then
  jiwer's default words (runs of whitespace made one space, split on spaces).
- `kaldi`: Kaldi's compute-wer (and icefall's scoring): the words exactly as written, aligned by Kaldi's own
  Levenshtein alignment (align.kaldi_codes), uniform weights where sclite's are 4, 3 and 3.

In a language written without spaces between words (scoring/language.py), the unit is the character, and each
normalizer ends by cutting the text into characters:
- `none` and `kaldi`: characters, a run of printable ASCII whole (sclite's `-c NOASCII -s`);
- `sclite`: the same, `A`-`Z` made `a`-`z` and words read as sclite reads them (sclite's `-c NOASCII`);
- `basic`: NFKC (full-width "ＡＩ２" is "ai2", half-width katakana full), lowercase, punctuation and symbols
  stripped (the ideographic ones too: "，。「」"), combining marks kept, traditional Chinese made simplified on both
  sides (zhconv, zh-cn), then characters with ASCII words whole: "我们用GPT-4写诗。" is "我 们 用 gpt 4 写 诗";
- `whisper`: Whisper's BasicTextNormalizer as its multilingual evaluations use it (lowercase, bracketed and
  parenthesized words removed, NFKC, symbols and punctuation made spaces, letters split into grapheme clusters),
  except that combining marks are kept: Whisper's makes every Devanagari or Thai vowel sign a space, and so splits
  words it should not. It is also the `whisper` normalizer of languages other than English that use spaces;
- `seed-tts-eval`: its test-zh recipe, exactly: the hypothesis made simplified Chinese (`zhconv.convert(text,
  'zh-cn')`, the reference left as written), punctuation deleted as in English, one pass of "  " → " ", then every
  character but spaces a unit, embedded English letter by letter, case kept: "Hello，世界" is "H e l l o 世 界".
- `cv3-eval`: CV3-Eval's run_wer.py (FunAudioLLM/CV3-Eval, utils/run_wer.py at f3b7ed5), exactly: seed-tts-eval's
  steps, with zh, ja and ko by characters (Korean too, which this tool otherwise scores by words:
  language.RECIPE_CHARACTERS) and the other languages it scores by lowercased words; the hypothesis made
  simplified only where the language is Chinese.
"""
from __future__ import annotations

import functools
import re
import string
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pipeline.scoring import language

Transform = Callable[[str], str]


def lowercase(text: str) -> str:
    return text.lower()


_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def ascii_lowercase(text: str) -> str:
    return text.translate(_ASCII_LOWER)


_TAGS = re.compile(r"(?<!\\);")  # word.c's nextColon: the first `;` with no backslash before it


def _sclite_word(token: str) -> str:
    cut = _TAGS.search(token)
    word = (token[:cut.start()] if cut else token).replace("\\", "")
    if word == "@":  # sclite's null word: an arc of nothing, outside an alternation too
        return ""
    return word[:-1] if len(word) > 1 and word.endswith("*") else word


def sclite_words(text: str) -> str:
    """Each word as sclite's new_WORD_parseText reads it: what comes before its first unescaped `;` (tag1 and tag2
    follow, and are not scored), every backslash dropped, then one closing `*` dropped from a word longer than it.
    A word of nothing left is no word, nor is `@`, which sclite aligns as nothing wherever it stands."""
    if ";" not in text and "\\" not in text and "*" not in text and "@" not in text:
        return text
    return " ".join(word for word in map(_sclite_word, text.split()) if word)


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def unicode_apostrophes(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'")


def strip_punctuation(text: str) -> str:
    """Replace every punctuation or symbol character by a space, but keep apostrophes that belong to words:
    "king's", "'tis", "o'er", "lovers'". Single quotes around a word and lone apostrophes go."""
    text = "".join(" " if unicodedata.category(c)[0] in "PS" and c != "'" else c for c in text)
    text = re.sub(r"(?<!\w)'(\w[\w']*?)'(?!\w)", r"\1", text)
    return re.sub(r"(?<!\w)'(?!\w)", " ", text)


def collapse_spaces(text: str) -> str:
    return " ".join(text.split())  # str.split's whitespace is re's \s: what str.isspace() calls a space


def compose(*transforms: Transform) -> Transform:
    def run(text: str) -> str:
        for t in transforms:
            text = t(text)
        return text
    if not any(isinstance(t, Each) for t in transforms):
        return run

    def many(texts: list[str]) -> list[str]:
        for t in transforms:
            texts = each(t, texts)
        return texts
    return Each(run, many)


@dataclass(frozen=True)
class Each:
    """A transform with a way of its own to do many texts at once, which gives each text what `one` gives it:
    a corpus is normalized a chunk at a time, and a step that costs a call per text costs one per chunk."""
    one: Transform
    many: Callable[[list[str]], list[str]]

    def __call__(self, text: str) -> str:
        return self.one(text)


def each(transform: Transform, texts: list[str]) -> list[str]:
    """transform(text) of each text."""
    return transform.many(texts) if isinstance(transform, Each) else list(map(transform, texts))


SEPARATOR = "\x00"  # what joins a chunk's texts into one string for a step done at once: no step adds or deletes it


def joined(texts: list[str]) -> str | None:
    """The texts as one string, SEPARATOR between them; None where a text holds SEPARATOR itself."""
    block = SEPARATOR.join(texts)
    return block if block.count(SEPARATOR) == len(texts) - 1 else None


def _whisper() -> Transform:
    return compose(_whisper_normalizers().EnglishTextNormalizer(), collapse_spaces)


def _whisper_normalizers():
    """openai-whisper's normalizers package, the same files, loaded under a name of its own: importing it as
    `whisper.normalizers` runs `whisper/__init__.py`, which imports torch (1.3 s) that scoring never uses."""
    import importlib.util
    import sys

    name = "_openai_whisper_normalizers"
    if name not in sys.modules:
        folder = Path(importlib.util.find_spec("whisper").origin).parent / "normalizers"
        spec = importlib.util.spec_from_file_location(name, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _seed_tts_eval() -> Transform:
    import string

    from zhon.hanzi import punctuation

    deleted = str.maketrans("", "", "".join(set(punctuation + string.punctuation) - {"'"}))

    def run(text: str) -> str:
        text = text.translate(deleted).replace("  ", " ").lower()
        words = [w for w in re.sub(r"\s\s+", " ", text).strip().split(" ") if w]
        # jiwer splits on spaces only: a lone tab or no-break space stays inside its word. Shown as ␣ there, so
        # that the words counted here are jiwer's
        return " ".join(re.sub(r"\s", "\u2423", w) for w in words)
    return run


def _seed_tts_eval_characters() -> Transform:
    import string

    from zhon.hanzi import punctuation

    # one character class, not str.translate: deleting from text beyond Latin-1, re is several times faster
    deleted = re.compile("[" + "".join(map(re.escape, sorted(set(punctuation + string.punctuation) - {"'"}))) + "]")

    def one(text: str) -> str:
        return language.characters(deleted.sub("", text))  # its "  " → " " changes no character

    def many(texts: list[str]) -> list[str]:
        block = joined(texts)
        if block is None:
            return list(map(one, texts))
        return list(map(language.characters, deleted.sub("", block).split(SEPARATOR)))
    return Each(one, many)


def _whisper_multilingual(split: bool) -> Transform:
    import regex

    def run(text: str) -> str:
        text = re.sub(r"\(([^)]+?)\)", "", re.sub(r"[<\[][^>\]]*[>\]]", "", text.lower()))
        text = "".join(" " if unicodedata.category(c)[0] in "SP" else c
                       for c in unicodedata.normalize("NFKC", text)).lower()
        if split:
            text = " ".join(regex.findall(r"\X", text, regex.U))
        return collapse_spaces(text)
    return run


def nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _simplified(text: str) -> str:
    return _simplifier()(text)


def _simplified_many(texts: list[str]) -> list[str]:
    return _simplifier().many(texts)


simplified = Each(_simplified, _simplified_many)


@functools.cache
def _simplifier() -> Transform:
    """zhconv.convert(text, "zh-cn"), the same text, faster where it can be: zhconv matches the longest key of its
    table at each character, but where no two neighbouring characters begin a key (most lines) no key longer than
    a character can match, and each character becomes what its own entry says: a str.translate. tests/test_languages.py
    checks the two agree."""
    zhconv = _zhconv()
    try:
        table, prefixes = zhconv.zhconv.getdict("zh-cn"), zhconv.zhconv.pfsdict["zh-cn"]
    except (AttributeError, KeyError):  # another zhconv than 1.4's: its own function alone
        return Each(functools.partial(zhconv.convert, locale="zh-cn"),
                    lambda texts: [zhconv.convert(t, "zh-cn") for t in texts])
    pairs = frozenset(p for p in prefixes if len(p) == 2)
    singles = {ord(k): v for k, v in table.items() if len(k) == 1}

    def one(text: str) -> str:
        if pairs.isdisjoint(map(str.__add__, text, text[1:])):
            return text.translate(singles)
        return zhconv.convert(text, "zh-cn")

    return Each(one, _many_simplified(one, zhconv, pairs, singles))


def _many_simplified(one: Transform, zhconv, pairs: frozenset[str], singles: dict[int, str]):
    """simplified() of a chunk's texts, the same, with the chunk's code points looked up at once: each character's
    conversion in a table of the Basic Multilingual Plane (a character past it, rare in Chinese, in the sorted
    keys), and the texts with a pair of neighbours that begins a key of several characters given to zhconv."""
    import numpy as np

    last = (1 << 16) - 1  # U+FFFF, a noncharacter: where a character past the plane is looked up in the tables
    if any(len(v) != 1 for v in singles.values()) or last in singles or max(map(ord, "".join(pairs))) >= last:
        return lambda texts: list(map(one, texts))  # a table unlike zhconv 1.4's
    keys = np.array(sorted(singles), np.int64)
    values = np.array([ord(singles[k]) for k in keys.tolist()], np.uint32)
    becomes = np.arange(last + 1, dtype=np.uint32)
    becomes[keys[keys < last]] = values[keys < last]
    begins, ends = np.zeros(last + 1, bool), np.zeros(last + 1, bool)
    begins[[ord(p[0]) for p in pairs]], ends[[ord(p[1]) for p in pairs]] = True, True
    pair_codes = np.sort(np.array([ord(a) << 21 | ord(b) for a, b in pairs], np.int64))  # two code points each

    def found(sorted_codes: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        at = np.minimum(np.searchsorted(sorted_codes, codes), len(sorted_codes) - 1)
        return sorted_codes[at] == codes, at

    def many(texts: list[str]) -> list[str]:
        block = joined(texts)
        if block is None or not block:
            return list(map(one, texts))
        points = np.frombuffer(block.encode("utf-32-le"), np.uint32)
        inside = np.minimum(points, last)
        converted = becomes[inside]
        past = np.flatnonzero(points > last)
        if past.size:
            hit, at = found(keys, points[past].astype(np.int64))
            converted[past] = np.where(hit, values[at], points[past])
        out = converted.tobytes().decode("utf-32-le").split(SEPARATOR)
        maybe = np.flatnonzero(begins[inside[:-1]] & ends[inside[1:]])  # SEPARATOR begins and ends no key
        hit = maybe[found(pair_codes, points[maybe].astype(np.int64) << 21 | points[maybe + 1])[0]]
        if hit.size:
            starts = np.flatnonzero(points == ord(SEPARATOR))
            for k in np.unique(np.searchsorted(starts, hit)).tolist():
                out[k] = zhconv.convert(texts[k], "zh-cn")
        return out
    return many


@functools.cache
def _zhconv():
    """zhconv, imported without pkg_resources: it reads its table through pkg_resources where it can, which loads
    every installed distribution's metadata (15 MB, a twentieth of a second), and else opens the same file beside
    its module."""
    import sys
    import warnings

    absent = "pkg_resources" not in sys.modules
    if absent:
        sys.modules["pkg_resources"] = None  # an import of it fails, as where setuptools no longer ships it
    try:
        with warnings.catch_warnings():  # where pkg_resources was imported already: it warns that it will go
            warnings.simplefilter("ignore", UserWarning)
            import zhconv
    finally:
        if absent:
            del sys.modules["pkg_resources"]
    return zhconv


NORMALIZERS: dict[str, Callable[[], Transform]] = {
    "none": lambda: collapse_spaces,
    "sclite": lambda: compose(sclite_words, ascii_lowercase, collapse_spaces),
    "basic": lambda: compose(nfc, unicode_apostrophes, lowercase, strip_punctuation, collapse_spaces),
    "whisper": _whisper,
    "seed-tts-eval": _seed_tts_eval,
    "cv3-eval": _seed_tts_eval,  # its run_wer.py's process_one for a language scored by words is seed-tts-eval's
    "kaldi": lambda: collapse_spaces,  # compute-wer compares the words as written; its alignment is Kaldi's
}
JIWER_COUNTED = frozenset({"seed-tts-eval", "cv3-eval"})  # recipes whose published numbers jiwer counted
KALDI_COUNTED = frozenset({"kaldi"})  # numbers Kaldi's compute-wer counts (align.kaldi_codes)


def get(name: str) -> Transform:
    if name not in NORMALIZERS:
        raise ValueError(f"unknown normalizer {name!r}; allowed: {', '.join(NORMALIZERS)}")
    return NORMALIZERS[name]()


@dataclass(frozen=True)
class Normalizer:
    """What a normalizer does to a reference and to a hypothesis in one language: the same, except in
    seed-tts-eval's Chinese recipe, which converts only the ASR's output to simplified characters."""
    reference: Transform
    hypothesis: Transform
    characters: language.Characters | None = None  # where the texts are cut as sclite's -c cuts them

    def references(self, texts: list[str]) -> list[str]:
        return each(self.reference, texts)

    def hypotheses(self, texts: list[str]) -> list[str]:
        return each(self.hypothesis, texts)


@functools.cache
def for_language(name: str, lang: str = "en", unit: str = "",
                 characters: language.Characters = language.NOASCII) -> Normalizer:
    """The normalizer `name` for text in `lang` (an ISO 639 code or tag): the words of English and of other
    languages written with spaces, or the characters of the others (scoring/language.py); `unit`: cut into
    that unit whatever the language and normalizer would choose (a comparison of normalizers counts one unit).
    `characters`: how `none` and `sclite`, sclite's own, cut characters (its -c with -D or DH)."""
    if (unit or language.unit(lang, name)) == language.WORD:
        if name == "whisper" and language.base(lang) != "en":
            t = _whisper_multilingual(split=False)
        else:
            t = get(name)
        return Normalizer(t, t)
    chinese = language.base(lang) in ("zh", "yue")
    if name == "seed-tts-eval":
        t = _seed_tts_eval_characters()
        return Normalizer(t, compose(simplified, t) if chinese else t)
    if name == "cv3-eval":  # its ja and ko as its zh, whose output only is made simplified where `'zh' in lang`
        t = _seed_tts_eval_characters()
        return Normalizer(t, compose(simplified, t) if "zh" in lang.lower() else t)
    own = {"none": lambda: characters,  # sclite's -c NOASCII -s
           "kaldi": lambda: language.characters_and_ascii_runs,
           "sclite": lambda: compose(get("sclite"), characters),
           "basic": lambda: compose(nfkc, unicode_apostrophes, lowercase, strip_punctuation,
                                    *([simplified] if chinese else []), language.characters_and_ascii_words),
           "whisper": lambda: _whisper_multilingual(split=True)}
    # a normalizer added to NORMALIZERS (a plugin's) is cut into characters after it runs
    t = own[name]() if name in own else compose(get(name), language.characters_and_ascii_words)
    return Normalizer(t, t, characters if name in ("none", "sclite") else None)
