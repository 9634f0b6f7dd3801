import sys
from pathlib import Path

import numpy as np
import pytest

from pipeline.tts import base
from pipeline.tts.base import UnspeakableText


@pytest.fixture(scope="module")
def joe():
    return base.load("piper:joe")


def test_piper_speaks_at_its_native_rate_deterministically(joe):
    a, sr = joe.synthesize("To be, or not to be, that is the question.")
    b, _ = joe.synthesize("To be, or not to be, that is the question.")
    assert sr == 22050 and a.dtype == np.float32
    assert 1.5 < len(a) / sr < 5.0
    assert np.array_equal(a, b)  # noise off: bit-identical
    assert 0.1 < np.abs(a).max() <= 1.0


def test_piper_voice_noise_is_an_option():
    noisy = base.load("piper:joe", base.TTSConfig(voice_noise=True))
    a, _ = noisy.synthesize("My lord, I will go.")
    b, _ = noisy.synthesize("My lord, I will go.")
    assert not np.array_equal(a, b)


@pytest.mark.parametrize("policy", ["", "PASSIVE", "passive"])
def test_piper_speaks_as_its_own_loader_and_its_threads_wait_as_omp_wait_policy_says(monkeypatch, policy):
    from piper import PiperVoice
    from piper.config import SynthesisConfig

    monkeypatch.setenv("OMP_WAIT_POLICY", policy)
    ours = base.load("piper:joe")
    options = ours.voice.session.get_session_options()
    if policy:
        assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    else:  # ONNX Runtime's own default: its pool spins
        with pytest.raises(RuntimeError, match="allow_spinning"):
            options.get_session_config_entry("session.intra_op.allow_spinning")
    text = "To be, or not to be, that is the question."
    theirs = PiperVoice.load(ours.voice.session._model_path)
    expected = np.concatenate([c.audio_float_array for c in theirs.synthesize(
        text, syn_config=SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0))])
    assert np.array_equal(ours.synthesize(text)[0], expected)  # how a thread waits changes no sample


@pytest.mark.parametrize("text", ["", "   \n\t", "...!?", "— —"])
def test_empty_and_punctuation_only_text_is_refused_clearly(joe, text):
    with pytest.raises(UnspeakableText, match="nothing to speak"):
        joe.synthesize(text)


def test_digits_and_non_ascii_are_spoken(joe):
    a, sr = joe.synthesize("In 1599, Cæsar’s ghost walked — naïvely.")
    assert len(a) / sr > 1.0


def test_long_unpunctuated_text_is_chunked():
    text = " ".join(["and the king rode forth"] * 80)  # 1,900+ characters, no punctuation
    pieces = base.chunks(text)
    assert len(pieces) >= 6 and max(len(p) for p in pieces) <= 300
    assert " ".join(pieces) == text


@pytest.mark.parametrize("name, rate", [("flite:slt", 16000), ("flite:awb", 16000), ("espeak:en-us", 22050)])
def test_command_line_voices_speak(name, rate):
    voice = base.load(name)
    audio, sr = voice.synthesize("The quality of mercy is not strained.")
    assert sr == rate  # each program's own rate: flite's voices 16 kHz, espeak-ng 22.05 kHz
    assert 1.0 < len(audio) / sr < 6.0
    assert np.abs(audio).max() > 0.05


def test_missing_binary_says_how_to_install(monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(base.VoiceUnavailable, match="apt-get install flite"):
        base.load("flite:slt")


def test_registry_lists_every_family():
    assert {"piper", "flite", "espeak"} <= set(base.VOICES.families())


def test_a_voice_says_its_language_and_a_run_in_another_is_refused_with_a_voice_that_speaks_it():
    """Piper's config and espeak-ng's own voice list say what each voice speaks; an English voice reading a run's
    Chinese sentences is refused before any work, as an English-only ASR model is, naming espeak-ng's Mandarin."""
    from pipeline.errors import ConfigError
    from pipeline.stages.synthesize import speaks

    found = {name: base.resolve(name) for name in ("piper:joe", "flite:slt", "espeak:cmn", "espeak:en-us+f3",
                                                   "espeak:de", "espeak:no-such-voice")}
    assert {name: s.language for name, s in found.items()} == {
        "piper:joe": "en_US", "flite:slt": "en", "espeak:cmn": "cmn", "espeak:en-us+f3": "en-us", "espeak:de": "de",
        "espeak:no-such-voice": ""}
    for name, lang in [("piper:joe", "en"), ("espeak:cmn", "zh"), ("espeak:de", "de-AT"), ("flite:slt", "en"),
                       ("espeak:no-such-voice", "zh")]:  # a voice that says nothing is taken at its word
        speaks(found[name], lang)
    with pytest.raises(ConfigError, match=r"piper:joe speaks en_US, and this run's sentences are in zh .*"
                                          r"e\.g\. espeak:cmn .* as zh=VOICE.*--language en"):
        speaks(found["piper:joe"], "zh")
    with pytest.raises(ConfigError, match="espeak:cmn speaks cmn, and this run's sentences are in fr .*espeak:fr-fr"):
        speaks(found["espeak:cmn"], "fr")


def test_espeak_mandarin_reads_characters_by_their_pinyin_in_context():
    """Debian's espeak-ng has no dictionary of Chinese characters: its cmn voice says each one's romanization and
    tone digit, read in English. espeak:cmn gives its pinyin voice each character's reading in its phrase (银行 is
    yin2 hang2, 行走 xing2 zou3), and pypinyin's dictionaries join the voice's files, so its wavs' keys."""
    from pipeline.tts import espeak

    assert espeak.pinyin("我们一起去银行，然后行走。") == "wo3 men5 yi4 qi3 qu4 yin2 hang2 , ran2 hou4 xing2 zou3 ."
    assert espeak.pinyin("Hello, world.") == "Hello, world."  # nothing to read: as it was
    source = base.resolve("espeak:cmn")
    assert {Path(f).name for f in source.files[1:]} == {"__init__.py", "pinyin_dict.json", "phrases_dict.json"}
    assert base.resolve("espeak:de").files == source.files[:1]  # the others: the program alone, as before
    voice = base.load(source)
    assert voice.voice == "cmn-latn-pinyin"
    a, sr = voice.synthesize("今天天气很好。")
    b, _ = voice.synthesize("jin1 tian1 tian1 qi4 hen3 hao3 .")  # what it says is what the pinyin voice says
    assert np.array_equal(a, b) and 1.0 < len(a) / sr < 4.0


def test_espeak_japanese_reads_kanji_as_pronounced_in_context(monkeypatch):
    """espeak-ng's Japanese voice says each kanji as "Chinese letter". espeak:ja gives it each word's
    pronunciation in katakana, from MeCab with UniDic, which join the voice's files; a kanji UniDic cannot read,
    or any kanji without the reader, is an error on its row naming it, and the other rows are spoken."""
    from pipeline.core import japanese
    from pipeline.tts import espeak
    from pipeline.tts.speaker import Speaker

    assert espeak.kana("espeak:ja", "今日は良い天気ですね。") == "キョーワヨイテンキデスネ。"  # は the particle: ワ
    assert espeak.kana("espeak:ja", "二十日に一人で来た。") == "ハツカニヒトリデキタ。"  # readings in context
    assert espeak.kana("espeak:ja", "こんにちは、ｶﾀｶﾅとiPhone 15。") == "コンニチワ、カタカナトiPhone 15。"
    source = base.resolve("espeak:ja")
    assert {Path(f).name for f in source.files[1:]} >= {"sys.dic", "matrix.bin", "char.bin", "unk.dic", "dicrc"}
    assert any(Path(f).name.startswith("libmecab") for f in source.files)
    voice = base.load(source)
    a, sr = voice.synthesize("東京は日本の首都です。")
    b, _ = voice.synthesize("トーキョーワニッポンノシュトデス。")  # what it says is what the kana says
    assert np.array_equal(a, b) and 1.0 < len(a) / sr < 4.0

    speaker = Speaker(source, base.TTSConfig())
    unknown, spoken = speaker.work(["𠀋は珍しい字です。", "東京は日本の首都です。"])
    assert unknown.status == "error" and "UniDic has no reading for 𠀋" in unknown.error
    assert spoken.status == "ok" and spoken.audio_seconds > 1.0

    monkeypatch.setitem(sys.modules, "fugashi", None)  # as where the ja extra is not installed
    japanese.reader.cache_clear()
    try:
        assert base.resolve("espeak:ja").files == source.files[:1]
        refused, kana = speaker.work(["東京は日本の首都です。", "こんにちは。"])
    finally:
        japanese.reader.cache_clear()
    assert refused.status == "error" and "東京日本首都" in refused.error and "pip install -e '.[ja]'" in refused.error
    assert kana.status == "ok" and kana.audio_seconds > 0.5
