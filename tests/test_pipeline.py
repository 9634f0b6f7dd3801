"""The pipeline as users run it: `python run_pipeline.py ...` in a working directory."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pipeline.core import store
from pipeline.core.records import columns
from pipeline.measures.base import MEASURES
from pipeline.scoring.utterances import ScoredUtterance
from tests.helpers import (
    NO_MEASURES,
    OWN_CACHE,
    ROOT,
    SENTENCES,
    SMALL_LM,
    SMALL_RUN,
    TINY,
    built_once,
    cli,
    ran,
    rows_without_timing,
    small_run,
    stage_status,
    unpunctuated_speech,
    write_sentences,
)

pytestmark = pytest.mark.slow  # real models and pipeline runs: left out of `pytest -m "not slow"`

@pytest.fixture(scope="module")
def default_run(tmp_path_factory, models_dir):
    cwd = tmp_path_factory.mktemp("default")
    first = cli(cwd, *SMALL_LM, *TINY, models=models_dir)
    return cwd, first


def test_full_run_writes_every_artifact(default_run, models_dir):
    cwd, proc = default_run
    assert ran(cwd) == ["prepare", "train", "sample", "attention", "synthesize", "assess", "transcribe", "score",
                        "compare", "report"]
    run = cwd / "results" / "default"
    rows = store.read_csv(run / "utterances.csv")
    fixed = columns(ScoredUtterance)
    assert rows and list(rows[0])[:len(fixed)] == fixed
    # the default measures' columns come after the fixed ones, and every spoken row has its naturalness
    assert list(rows[0])[len(fixed):] == list(MEASURES.columns(MEASURES.default()))
    assert all(1 <= float(r["dnsmos_ovrl"]) <= 5 for r in rows)
    assert all(r["status"] == "ok" and float(r["perplexity"]) > 1 for r in rows)
    assert all((cwd / "results" / "default" / r["audio_path"]).exists() for r in rows)
    assert len(store.read_json(run / "sampled_sentences.json")) == 3
    for name in ("sentences.csv", "reference_perplexity.csv", "errors.csv", "confusions.csv", "summary.csv",
                 "summary.json", "ref.trn", "hyp.trn", "pralign.txt", "report.html", "run.log", "manifest.json"):
        assert (run / name).exists(), name
    sentences = store.read_csv(run / "sentences.csv")  # each word's surprisal, and the attention of each sentence
    assert all(len(s["word_surprisal"].split(";")) == len(s["text"].split()) for s in sentences)
    assert all(u["word_surprisal"] for u in rows) and (run / "surprisal.csv").exists()
    index = store.read_json(run / "attention" / "index.json")
    assert set(index["sentences"]) == {s["sentence_id"] for s in sentences}
    with np.load(run / "attention" / index["sentences"][sentences[0]["sentence_id"]]["file"]) as z:
        assert z["weights"].shape[:2] == (2, 2) and z["mean_over_heads"].shape[0] == 2  # SMALL_LM: 2 layers × 2 heads
    assert 'id="attention-data"' in (run / "report.html").read_text()
    manifest = store.read_json(run / "manifest.json")
    assert manifest["versions"]["torch"].startswith("2.13.0") and manifest["versions"]["faster-whisper"]
    assert manifest["config"]["asr"]["engines"] == ["faster-whisper:tiny.en"]
    assert manifest["asr_decoding"].startswith("each utterance alone")
    assert any(k.endswith("ckpt.pt") for k in manifest["files"])
    assert any("en_US-joe-medium.onnx" in k for k in manifest["files"])
    assert set(manifest["stage_seconds"]) == {"prepare", "train", "sample", "attention", "synthesize", "assess",
                                              "transcribe", "score", "compare", "report"}
    assert "micro WER" in proc.stdout and "report.html" in proc.stdout


def test_rerun_with_nothing_changed_recomputes_nothing(default_run, models_dir):
    cwd, _ = default_run
    wavs = {p: p.stat().st_mtime_ns for p in (cwd / "audio").rglob("*.wav")}
    again = cli(cwd, *SMALL_LM, *TINY, models=models_dir)
    assert again.returncode == 0 and ran(cwd) == []
    assert stage_status(cwd) == dict.fromkeys(["prepare", "train", "sample", "attention", "synthesize", "assess",
                                               "transcribe", "score", "compare", "report"], "up to date")
    assert {p: p.stat().st_mtime_ns for p in (cwd / "audio").rglob("*.wav")} == wavs


def test_changing_the_normalizer_reruns_only_scoring_and_report(default_run, models_dir):
    cwd, _ = default_run
    cli(cwd, *SMALL_LM, *TINY, "--normalize", "none", models=models_dir)
    assert ran(cwd) == ["score", "compare", "report"]
    rows = store.read_csv(cwd / "results" / "default" / "utterances.csv")
    assert any(r["reference_normalized"] != r["reference_normalized"].lower() for r in rows)


def test_changing_the_voice_reruns_synthesis_onwards(default_run, models_dir):
    cwd, _ = default_run
    cli(cwd, *SMALL_LM, *TINY, "--voices", "piper:joe,flite:slt", models=models_dir)
    assert ran(cwd) == ["synthesize", "assess", "transcribe", "score", "compare", "report"]
    rows = store.read_csv(cwd / "results" / "default" / "utterances.csv")
    assert {r["voice"] for r in rows} == {"piper:joe", "flite:slt"}
    spoken = store.read_json(cwd / "results" / "default" / "manifest.json")["stage_results"]["synthesize"]
    # piper:joe's clips were made by the first run and reused; flite:slt's are new
    assert spoken["reused"] == len({r["sentence_id"] for r in rows if r["voice"] == "piper:joe"})


def test_same_config_and_seed_give_identical_csvs(tmp_path_factory, worker_id, tmp_path, models_dir):
    # the first run is the one test_report.py reads, made by whichever module needed it first, on any worker
    first = built_once(tmp_path_factory, worker_id, "small-run", lambda folder: small_run(folder, models_dir))
    second = small_run(tmp_path, models_dir)
    outs = [first / "results" / "default", second / "results" / "default"]
    for name in ("utterances.csv", "errors.csv", "confusions.csv", "summary.csv", "sentences.csv", "measures.csv",
                 "measure_summary.csv", "ref.trn", "hyp.trn"):
        if name.endswith(".csv"):
            assert rows_without_timing(outs[0] / name) == rows_without_timing(outs[1] / name), name
        else:
            assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes()
    wav_a = sorted(p.relative_to(first) for p in (first / "audio").rglob("*.wav"))
    wav_b = sorted(p.relative_to(second) for p in (second / "audio").rglob("*.wav"))
    assert wav_a == wav_b and wav_a
    assert [(first / p).read_bytes() for p in wav_a] == [(second / p).read_bytes() for p in wav_b]


def test_kill_minus_nine_then_rerun_completes_and_keeps_finished_items(tmp_path, models_dir):
    lines = [f"{s} Line {i}." for i, s in enumerate(SENTENCES * 3)]
    sentences = write_sentences(tmp_path / "s.txt", lines)
    args = [sys.executable, str(ROOT / "run_pipeline.py"), "--set", f"models_dir={models_dir}", *OWN_CACHE,
            "--sentences", str(sentences), *TINY, *NO_MEASURES]
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "TQDM_DISABLE": "1"})
    audio = tmp_path / "audio"
    deadline = time.time() + 120
    while time.time() < deadline and len(list(audio.rglob("*.json"))) < 6:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = {p: p.stat().st_mtime_ns for p in audio.rglob("*.json")}
    assert 6 <= len(done_before) < len(lines), "the kill should land mid-synthesis"
    wav_before = {p.with_suffix(".wav"): p.with_suffix(".wav").stat().st_mtime_ns for p in done_before}
    cli(tmp_path, "--sentences", str(sentences), *TINY, *NO_MEASURES, models=models_dir)
    rows = store.read_csv(tmp_path / "results" / "default" / "utterances.csv")
    assert len(rows) == len(lines) and all(r["status"] == "ok" for r in rows)
    assert all(p.stat().st_mtime_ns == t for p, t in wav_before.items())  # finished items were kept
    for p in audio.rglob("*.wav"):
        info = sf.info(p)
        assert info.frames > 0
    assert not list(tmp_path.rglob("*.tmp"))


def test_second_run_on_the_same_directory_is_refused(tmp_path, models_dir):
    from pipeline.core import lock

    sentences = write_sentences(tmp_path / "s.txt")
    with lock.writing(tmp_path / "results" / "default"):
        proc = cli(tmp_path, "--sentences", str(sentences), *TINY, models=models_dir, check=False)
    assert proc.returncode == 3
    assert "in use by pid" in proc.stderr and str(os.getpid()) in proc.stderr


def test_conditions_write_audio_and_a_wer_vs_snr_curve(tmp_path, models_dir):
    sentences = write_sentences(tmp_path / "s.txt", SENTENCES[:3])
    cli(tmp_path, "--sentences", str(sentences), *TINY, *NO_MEASURES, "--conditions",
        "clean,noise:snr=20,noise:snr=0,speed:0.9,speed:1.1", models=models_dir)
    rows = store.read_csv(tmp_path / "results" / "default" / "utterances.csv")
    assert {r["condition"] for r in rows} == {"clean", "noise:snr=20", "noise:snr=0", "speed:0.9", "speed:1.1"}
    by = {(r["sentence_id"], r["condition"]): r for r in rows}
    clean, _ = sf.read(tmp_path / "results" / "default" / by[("l0001", "clean")]["audio_path"])
    slow, _ = sf.read(tmp_path / "results" / "default" / by[("l0001", "speed:0.9")]["audio_path"])
    assert len(slow) == pytest.approx(len(clean) / 0.9, rel=0.01)
    noisy, _ = sf.read(tmp_path / "results" / "default" / by[("l0001", "noise:snr=0")]["audio_path"])
    assert len(noisy) == len(clean) and not np.allclose(noisy, clean, atol=0.01)
    summary = store.read_csv(tmp_path / "results" / "default" / "summary.csv")
    wer = {s["condition"]: float(s["micro_wer"]) for s in summary}
    assert wer["noise:snr=0"] >= wer["clean"]
    assert 'alt="WER vs SNR"' in (tmp_path / "results" / "default" / "report.html").read_text()


def test_bad_sentences_get_a_recorded_outcome_and_the_rest_go_through(tmp_path, models_dir):
    long = unpunctuated_speech(1400)
    lines = ["A plain sentence to start with.", "...!?", "Çà et là, naïve Zoë sang.", "In 1603 there were 42 players.",
             long, "The last line is fine too."]
    sentences = write_sentences(tmp_path / "s.txt", lines)
    proc = cli(tmp_path, "--sentences", str(sentences), *TINY, *NO_MEASURES, models=models_dir)
    rows = store.read_csv(tmp_path / "results" / "default" / "utterances.csv")
    status = [r["status"] for r in rows]
    assert status == ["ok", "skipped", "ok", "ok", "ok", "ok"]
    assert "nothing to speak" in rows[1]["error"]
    assert float(rows[4]["audio_seconds"]) > 60 and float(rows[4]["wer"]) < 0.5, rows[4]  # chunked, heard in full
    assert proc.returncode == 0  # skipped is not failed


def test_audio_manifest_scores_recordings_and_reports_bad_rows(tmp_path, models_dir, piper_speech):
    texts, speech = piper_speech
    for i, a in enumerate(speech):
        sf.write(tmp_path / f"rec{i}.wav", a, 16000)
    (tmp_path / "corrupt.wav").write_bytes(b"RIFF\x00\x00not really a wav")
    (tmp_path / "empty.wav").write_bytes(b"")
    manifest = tmp_path / "m.tsv"
    manifest.write_text("id\taudio\treference\n" + "".join(f"r{i}\trec{i}.wav\t{t}\n" for i, t in enumerate(texts))
                        + "bad1\tcorrupt.wav\tsome words\nbad2\tempty.wav\tsome words\nbad3\tmissing.wav\tsome words\n")
    proc = cli(tmp_path, "--audio-manifest", str(manifest), *TINY, *NO_MEASURES, models=models_dir, check=False)
    assert ran(tmp_path) == ["recordings", "assess", "transcribe", "score", "compare", "report"]  # no LM, no attention
    assert proc.returncode == 1  # some rows failed, and the exit code says so
    rows = {r["sentence_id"]: r for r in store.read_csv(tmp_path / "results" / "default" / "utterances.csv")}
    assert all(rows[f"r{i}"]["status"] == "ok" for i in range(3))
    assert float(rows["r1"]["wer"]) <= 0.2
    assert "unreadable" in rows["bad1"]["error"] and "empty" in rows["bad2"]["error"]
    assert "no such audio file" in rows["bad3"]["error"]


def test_unwritable_results_directory_gives_a_clear_message(tmp_path, models_dir):
    sentences = write_sentences(tmp_path / "s.txt")
    if os.geteuid() == 0:  # root ignores permission bits; sysfs refuses new directories even to root
        target = "/sys/pipeline-results"
    else:
        (tmp_path / "ro").mkdir()
        (tmp_path / "ro").chmod(0o555)
        target = str(tmp_path / "ro")
    proc = cli(tmp_path, "--sentences", str(sentences), *TINY, "--set", f"results_dir={target}", models=models_dir,
               check=False)
    assert proc.returncode == 4
    assert "writable" in proc.stderr and Path(target).name in proc.stderr


def test_a_later_stage_alone_on_a_fresh_run_says_what_to_run_first(tmp_path, models_dir):
    sentences = write_sentences(tmp_path / "s.txt")
    proc = cli(tmp_path, "--sentences", str(sentences), "--stages", "report", models=models_dir, check=False)
    assert proc.returncode == 2
    assert "stage report needs" in proc.stderr and "utterances.csv" in proc.stderr


def test_user_sentences_get_perplexity_from_the_trained_model(default_run, models_dir, tmp_path):
    sentences = write_sentences(tmp_path / "s.txt", SENTENCES[:2])
    cli(tmp_path, "--sentences", str(sentences), *SMALL_LM, *TINY, *NO_MEASURES, models=models_dir)
    rows = store.read_csv(tmp_path / "results" / "default" / "sentences.csv")
    assert [r["sentence_id"] for r in rows] == ["l0001", "l0002"]
    assert all(float(r["perplexity"]) > 1 and int(r["lm_tokens"]) > 5 for r in rows)


def test_scores_of_an_older_scoring_revision_are_made_again_not_named_the_new_one(tmp_path_factory, worker_id,
                                                                                 models_dir):
    """The scoring revision joins the keys of the score and compare stages as well as the manifest: after an
    upgrade that changes what scoring counts, a rerun scores again, where it used to keep the old scores and write
    the new revision into the manifest, which compare-runs trusts. (The upgrade: the same run in a process whose
    revision is one higher.)"""
    cwd = built_once(tmp_path_factory, worker_id, "small-run", lambda folder: small_run(folder, models_dir))
    args = ["--set", f"models_dir={models_dir}", *OWN_CACHE, *SMALL_RUN]
    upgraded = ("import sys; from pipeline.cli import main; from pipeline.stages import compare, score; "
                "compare.SCORING_REVISION = score.SCORING_REVISION = score.SCORING_REVISION + 1; "
                "sys.exit(main(sys.argv[1:]))")
    cli(cwd, *SMALL_RUN, models=models_dir)
    assert stage_status(cwd)["score"] == stage_status(cwd)["compare"] == "up to date"
    proc = subprocess.run([sys.executable, "-c", upgraded, *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "TQDM_DISABLE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert stage_status(cwd)["score"] == stage_status(cwd)["compare"] == "ran"
    manifest = store.read_json(cwd / "results" / "default" / "manifest.json")
    from pipeline.scoring.config import SCORING_REVISION

    assert manifest["scoring_revision"] == SCORING_REVISION + 1
