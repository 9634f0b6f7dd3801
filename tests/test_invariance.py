"""An utterance's transcript depends on its own audio, the engine and the decoding options, and on nothing else:
not on the utterances next to it, batch size, order, threads, the executor or the number of actors."""
import random

import numpy as np
import pytest
import soundfile as sf

from pipeline.asr import base
from pipeline.core import store
from tests.helpers import NO_MEASURES, SENTENCES, cli, ran

pytestmark = pytest.mark.slow  # real models and pipeline runs: left out of `pytest -m "not slow"`

ENGINES = ["faster-whisper:tiny.en", "faster-whisper-trim:tiny.en", "openai-whisper:tiny.en", "whisper-cpp:tiny.en",
           "pocketsphinx:en-us"]
# Every engine's batches are checked in process (test_batch_size_order_and_threads_do_not_change_a_transcript); the
# pipeline hands its batches to every engine alike, so two engines of two families check that.
PIPELINE_ENGINES = ["faster-whisper:tiny.en", "pocketsphinx:en-us"]


@pytest.fixture(scope="module")
def speech():
    """Six spoken lines of different lengths and, among them, two seconds of digital silence."""
    from pipeline.io import audio
    from pipeline.tts import base as tts

    voice = tts.load("piper:joe")
    arrays = [audio.resample(*voice.synthesize(text)) for text in SENTENCES]
    arrays.insert(3, np.zeros(2 * audio.SAMPLE_RATE, dtype=np.float32))
    return arrays


def texts(recognizer, arrays) -> list[str]:
    return [d.text for d in recognizer.transcribe(arrays)]


@pytest.mark.parametrize("engine", ENGINES)
def test_batch_size_order_and_threads_do_not_change_a_transcript(models_dir, speech, engine):
    one = base.load(engine, base.ASRConfig(threads=1), str(models_dir))
    alone = [texts(one, [a])[0] for a in speech]
    assert sum(bool(t) for t in alone) >= 6  # real transcripts, not empty strings agreeing with each other
    # then shuffled, on two threads, in batches of four: a full one and one of three, each with other neighbours
    order = list(range(len(speech)))
    random.Random(7).shuffle(order)
    two = base.load(engine, base.ASRConfig(threads=2), str(models_dir))
    shuffled = sum((texts(two, [speech[i] for i in order[k:k + 4]]) for k in range(0, len(order), 4)), [])
    assert [shuffled[order.index(i)] for i in range(len(speech))] == alone


def test_bf16_decodes_are_as_independent_as_fp32_ones(models_dir, speech):
    """bf16 autocast changes the arithmetic, not what a decode depends on. Three utterances, since a CPU without
    native bf16 runs tiny.en's bf16 kernels in software, at about 5 s an utterance."""
    some = speech[:3]
    one = base.load("openai-whisper:tiny.en", base.ASRConfig(threads=1, compute_type="bfloat16"), str(models_dir))
    alone = [texts(one, [a])[0] for a in some]
    assert all(alone)
    two = base.load("openai-whisper:tiny.en", base.ASRConfig(threads=2, compute_type="bfloat16"), str(models_dir))
    assert texts(two, some[::-1]) == alone[::-1]  # another batch, order and thread count


def write_manifest(tmp_path, speech, rows) -> str:
    """rows: (id, index into `speech` or None for silence, reference)."""
    lines = ["id\taudio\treference"]
    for uid, index, reference in rows:
        samples = np.zeros(2 * 16000, np.float32) if index is None else speech[index]
        sf.write(tmp_path / f"{uid}.wav", samples, 16000)
        lines.append(f"{uid}\t{uid}.wav\t{reference}")
    path = tmp_path / "m.tsv"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def hypotheses(run) -> dict[tuple, str]:
    return {(r["sentence_id"], r["asr"]): r["hypothesis"] for r in store.read_csv(run / "utterances.csv")}


def test_the_pipelines_batch_size_changes_no_hypothesis(tmp_path, models_dir, speech):
    manifest = write_manifest(tmp_path, speech, [(f"u{i}", i, SENTENCES[min(i, 5)]) for i in range(len(speech))])
    runs = {}
    for size in (1, 4):  # alone, and in batches of four: one full, then one of three
        cli(tmp_path, *NO_MEASURES, "--audio-manifest", manifest, "--asr", ",".join(PIPELINE_ENGINES),
            "--run", f"b{size}", "--set", f"asr.batch_size={size}", models=models_dir)
        runs[size] = tmp_path / "results" / f"b{size}"
    assert len(hypotheses(runs[1])) == len(PIPELINE_ENGINES) * len(speech)
    assert hypotheses(runs[1]) == hypotheses(runs[4])
    assert (runs[1] / "hyp.trn").read_bytes() == (runs[4] / "hyp.trn").read_bytes()


def test_silence_between_two_recordings_is_not_scored_as_speech(tmp_path, models_dir, speech):
    line = SENTENCES[1]
    manifest = write_manifest(tmp_path, speech, [("a", 1, line), ("quiet", None, line), ("b", 1, line)])
    cli(tmp_path, *NO_MEASURES, "--audio-manifest", manifest, "--asr", "faster-whisper:tiny.en", models=models_dir,
        check=False)
    rows = {r["sentence_id"]: r for r in store.read_csv(tmp_path / "results" / "default" / "utterances.csv")}
    assert float(rows["a"]["wer"]) <= 0.2 and rows["a"]["hypothesis"] == rows["b"]["hypothesis"]
    quiet = rows["quiet"]
    assert float(quiet["wer"]) >= 0.5 and "silent_audio" in quiet["flags"].split(";")
    assert float(quiet["level_dbfs"]) < -100 and float(rows["a"]["level_dbfs"]) > -30
    summary = store.read_csv(tmp_path / "results" / "default" / "summary.csv")
    assert summary[0]["flagged"] == "1" and summary[0]["silent_audio"] == "1"


def test_a_recording_replaced_in_place_is_transcribed_again(tmp_path, models_dir, speech):
    manifest = write_manifest(tmp_path, speech, [("a", 0, SENTENCES[0]), ("b", 1, SENTENCES[1])])
    args = (*NO_MEASURES, "--audio-manifest", manifest, "--asr", "faster-whisper:tiny.en")
    cli(tmp_path, *args, models=models_dir)
    run = tmp_path / "results" / "default"
    before = {r["sentence_id"]: r for r in store.read_csv(run / "utterances.csv")}
    assert before["a"]["audio_sha256"] == store.sha256_file(tmp_path / "a.wav")
    sf.write(tmp_path / "a.wav", speech[2], 16000)  # same name, same manifest, new speech
    proc = cli(tmp_path, *args, models=models_dir)
    assert proc.returncode == 0 and "transcribe" in ran(tmp_path)
    after = {r["sentence_id"]: r for r in store.read_csv(run / "utterances.csv")}
    assert after["a"]["audio_sha256"] == store.sha256_file(tmp_path / "a.wav") != before["a"]["audio_sha256"]
    assert "lord" in after["a"]["hypothesis"].lower() and after["b"]["hypothesis"] == before["b"]["hypothesis"]
    manifest_json = store.read_json(run / "manifest.json")
    assert manifest_json["stage_results"]["transcribe"]["reused"] == 1  # b was not heard again


def test_the_silence_condition_reports_a_hallucination_rate(tmp_path, models_dir):
    from tests.helpers import write_sentences

    sentences = write_sentences(tmp_path / "s.txt", SENTENCES[:3])
    proc = cli(tmp_path, *NO_MEASURES, "--sentences", str(sentences), "--asr", "faster-whisper:tiny.en",
               "--conditions", "clean,silence", models=models_dir)
    run = tmp_path / "results" / "default"
    rows = [r for r in store.read_csv(run / "utterances.csv") if r["condition"] == "silence"]
    assert len(rows) == 3 and all(r["reference"] == "" and r["wer"] == "" and r["status"] == "ok" for r in rows)
    assert all(float(r["level_dbfs"]) < -100 and "silent_audio" not in r["flags"] for r in rows)
    assert all(int(r["insertions"]) == len(r["hypothesis_normalized"].split()) for r in rows)
    summary = {s["condition"]: s for s in store.read_csv(run / "summary.csv")}
    words = sum(len(r["hypothesis_normalized"].split()) for r in rows)
    minutes = sum(float(r["audio_seconds"]) for r in rows) / 60
    assert float(summary["silence"]["hallucination_wpm"]) == pytest.approx(words / minutes, abs=0.01)
    assert summary["silence"]["micro_wer"] == "" and summary["clean"]["hallucination_wpm"] == ""
    assert float(summary["clean"]["micro_wer"]) < 0.3
    assert "words/min" in proc.stdout


def test_ctranslate2_kernel_settings_from_the_environment_are_in_the_key(tmp_path, models_dir, speech):
    import os

    manifest = write_manifest(tmp_path, speech, [("a", 0, SENTENCES[0]), ("b", 1, SENTENCES[1])])
    args = (*NO_MEASURES, "--audio-manifest", manifest, "--asr", "faster-whisper:tiny.en")
    plain = {k: v for k, v in os.environ.items() if not k.startswith("CT2_")}
    cli(tmp_path, *args, models=models_dir, env=plain)
    run = tmp_path / "results" / "default"
    cli(tmp_path, *args, models=models_dir, env={**plain, "CT2_USE_MKL": "1", "CT2_VERBOSE": "1"})
    manifest_json = store.read_json(run / "manifest.json")
    assert "transcribe" in ran(tmp_path) and manifest_json["stage_results"]["transcribe"]["reused"] == 0
    assert manifest_json["ctranslate2_settings"] == {"CT2_USE_MKL": "1"}  # logging is not a setting
    cli(tmp_path, *args, models=models_dir, env={**plain, "CT2_USE_MKL": "1"})
    assert "transcribe" not in ran(tmp_path)
    cli(tmp_path, *args, models=models_dir, env=plain)  # MKL's transcripts do not stand for CTranslate2's own choice
    manifest_json = store.read_json(run / "manifest.json")
    assert manifest_json["stage_results"]["transcribe"]["reused"] == 0 and manifest_json["ctranslate2_settings"] == {}
