"""eSpeak NG voices (Debian `espeak-ng`), named by espeak's voice code: espeak:en-us, espeak:de, espeak:cmn, ...

espeak:cmn, Mandarin, reads Chinese characters through their pinyin. Debian's espeak-ng is built without the
Chinese character dictionary (upstream's optional cmn_listx), so its cmn voice says each character as an English
reading of its romanization and tone digit: Whisper base hears "今天天气很好。" as "盡望 盡望 盡望 其4103" and
"我们一起去公园散步吧。" as "1-3-4-4-1-1-2-3-4-4-5". Here pypinyin gives each character its reading in context (its
phrase dictionary chooses among a character's readings), with tone numbers, and espeak-ng's own pinyin voice,
cmn-latn-pinyin, speaks them: "我们一起去公园散步吧。" comes back as "我們一起去當原山步行". pypinyin's dictionaries
are among the voice's model files, so they join its wavs' keys.

espeak-ng's Japanese voice has the same gap: it reads kana, and says each kanji as the English words "Chinese
letter". espeak:ja reads a sentence as it is pronounced: MeCab (fugashi) with UniDic (unidic-lite) splits it into
words and gives each its pronunciation in context, in katakana ("今日は" キョーワ: the particle は as ワ, long
vowels as ー, which the ja voice lengthens), so kana is read as said too ("こんにちは" コンニチワ). Its dictionary
and MeCab's library are among the voice's files, so its wavs' keys. Without them (the `ja` extra) a sentence in
kana is spoken as written and one with kanji is an error on its row naming the fix; a kanji the dictionary has no
reading for is one too, naming it: no CER is made of the voice saying "Chinese letter"."""
from __future__ import annotations

import functools
import re
import subprocess
import unicodedata
from dataclasses import replace
from pathlib import Path

from pipeline.core import japanese
from pipeline.tts import base
from pipeline.tts.command import CommandVoice, program

MANDARIN, PINYIN_VOICE, JAPANESE = "cmn", "cmn-latn-pinyin", "ja"
# the full-width punctuation Chinese text pauses at, as espeak-ng pauses at its ASCII forms
PAUSES = str.maketrans({"。": ".", "，": ",", "、": ",", "！": "!", "？": "?", "；": ";", "：": ":", "…": "..."})
HAN = re.compile(r"[\u3400-\u9fff\U00020000-\U0003134f]")


def load(source, options) -> CommandVoice:
    argv = lambda v, text, wav: ["espeak-ng", "-v", v, "-f", str(text), "-w", str(wav)]  # noqa: E731
    hint = "apt-get install espeak-ng (scripts/setup does this)"
    if source.language == MANDARIN:
        return CommandVoice(source, "espeak-ng", argv, hint, voice=PINYIN_VOICE, prepare=pinyin)
    if source.language == JAPANESE:
        return CommandVoice(source, "espeak-ng", argv, hint, prepare=functools.partial(kana, source.spec))
    return CommandVoice(source, "espeak-ng", argv, hint)


def pinyin(text: str) -> str:
    """Chinese characters as pinyin with tone numbers (5 for the neutral tone), the rest as it is."""
    if not HAN.search(text):
        return text
    from pypinyin import Style, lazy_pinyin

    return " ".join(lazy_pinyin(text, style=Style.TONE3, neutral_tone_with_five=True)).translate(PAUSES)


def kana(voice: str, text: str) -> str:
    """Japanese in katakana as it is pronounced, word by word in context; without the reader, kana as written."""
    try:
        said = japanese.words(unicodedata.normalize("NFKC", text))  # half-width katakana, full-width digits: as read
    except ImportError:
        said = None
    if said is not None:
        text = "".join(space + spoken for space, _, spoken in said)
    kanji = "".join(dict.fromkeys(HAN.findall(text)))
    if kanji and said is None:
        raise ValueError(f"{voice} reads kanji through MeCab with UniDic, which are not installed: this sentence has "
                         f"{kanji[:12]}; {japanese.FIX}, or write it in kana")
    if kanji:
        raise ValueError(f"{voice}: UniDic has no reading for {kanji[:12]} here, and espeak-ng would say each as "
                         "\"Chinese letter\"; write it in kana")
    return text


def pinyin_files() -> tuple[str, ...]:
    """pypinyin's dictionaries and its version's file: what its readings depend on."""
    import pypinyin

    folder = Path(pypinyin.__file__).parent
    return tuple(str(folder / name) for name in ("__init__.py", "pinyin_dict.json", "phrases_dict.json"))


@functools.cache
def voices() -> tuple[tuple[str, ...], ...]:
    """espeak-ng's own list (`--voices`): each voice's language code, name and file, lower-cased."""
    listed = subprocess.run(["espeak-ng", "--voices"], capture_output=True, text=True, check=False).stdout
    return tuple(tuple(f.lower() for f in (fields[1], fields[3], fields[4]))
                 for fields in (line.split() for line in listed.splitlines()[1:]) if len(fields) >= 5)


def language_of(voice: str) -> str:
    """The language espeak-ng lists the voice under ("en-us+f3" is a variant of en-us), or "" where it lists it
    under none (an mbrola voice, a name it does not know)."""
    name = voice.partition("+")[0].lower()
    return next((code for code, *names in voices() if name in (code, *names)), "")


def voices_of(code: str) -> list[str]:
    """espeak-ng's voices of a language, by the code a voice declares it with, its main one first (cmn: cmn,
    cmn-latn-pinyin; fr: fr-fr, fr-be, fr-ch)."""
    found = [listed for listed, *_ in voices() if listed == code or listed.startswith(code + "-")]
    return sorted(found, key=lambda listed: listed not in (code, f"{code}-{code}", f"{code}-us"))


def resolve(spec: str, options, models_dir: str):
    source = program("espeak-ng")(spec, options, models_dir)
    if not source.path:
        return source
    language = language_of(source.name)
    extra = {MANDARIN: pinyin_files, JAPANESE: japanese.files}.get(language, tuple)()
    return replace(source, language=language, files=source.files + extra)


base.VOICES.register("espeak", load, resolve=resolve)
