"""Japanese as it is pronounced: MeCab (fugashi) with UniDic (unidic-lite) splits a text into words and gives each
its pronunciation in context, in katakana ("今日は" キョー ワ: the particle は as ワ, long vowels as ー). espeak:ja
speaks what it gives, and a typed listening test in Japanese counts an answer right where it reads as the
sentence does (kana for kanji). Both come with the `ja` extra; without it `reader()` raises ImportError."""
from __future__ import annotations

import functools
import threading
from pathlib import Path

# the files of UniDic that MeCab reads when it analyses (the rest build the dictionary, or are its licences)
DICTIONARY = ("mecabrc", "dicrc", "sys.dic", "unk.dic", "char.bin", "matrix.bin")
FIX = "scripts/setup --test, or .venv/bin/pip install -e '.[ja]', installs them"
LOCK = threading.Lock()  # a MeCab tagger parses one text at a time, and its words live in its buffer
KATAKANA = str.maketrans({chr(c): chr(c + 0x60) for c in range(0x3041, 0x3097)})  # hiragana → katakana


@functools.cache
def reader():
    import fugashi
    import unidic_lite

    # its own mecabrc and dictionary named, so neither MECABRC nor another UniDic installed beside it is read
    return fugashi.Tagger(f'-r "{unidic_lite.DICDIR}/mecabrc" -d "{unidic_lite.DICDIR}"')


def pronunciation(word) -> str:
    """A word's pronunciation in katakana (UniDic's `pron`), or the word as written where it has none (a symbol,
    a word of Latin letters, one the dictionary does not know)."""
    spoken = getattr(word.feature, "pron", None)
    return spoken if spoken and spoken != "*" else word.surface


def words(text: str) -> list[tuple[str, str, str]]:
    """Each word of the text, in its likeliest reading: the whitespace before it, the word as written, and its
    pronunciation."""
    tagger = reader()
    with LOCK:
        return [(word.white_space, word.surface, pronunciation(word)) for word in tagger(text)]


@functools.lru_cache(maxsize=65536)  # a sentence's stretch is read again for every answer that errs there
def readings(text: str, most: int) -> tuple[str, ...]:
    """The text's pronunciations under its `most` likeliest analyses, likeliest first (私: ワタクシ, ワタシ, …)."""
    tagger = reader()
    with LOCK:
        return tuple("".join(map(pronunciation, analysed)) for analysed in tagger.nbestToNodeList(text, most))


def files() -> tuple[str, ...]:
    """MeCab's library and UniDic's dictionary: what the readings depend on; none where they are not installed."""
    try:
        import fugashi
        import unidic_lite
    except ImportError:
        return ()
    code = Path(fugashi.__file__).parent
    libraries = sorted(str(f) for folder in (code, code.with_name("fugashi.libs")) if folder.is_dir()
                       for f in folder.iterdir() if ".so" in f.name)
    dictionary = Path(unidic_lite.DICDIR)
    return (*libraries, *(str(dictionary / name) for name in DICTIONARY))
