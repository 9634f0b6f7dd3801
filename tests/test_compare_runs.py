"""compare-runs, as a team uses it between two versions of a voice: real runs on the same sentences, the release
gate's exit codes, the refusal of runs scored differently (each evaluator field), partial overlap, bad input,
and the listening page in a real browser."""
import base64
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pipeline.core import store
from tests.helpers import ROOT, TINY, cli, write_sentences

pytestmark = pytest.mark.slow

LINES = ["Now is the winter of our discontent.", "To be, or not to be, that is the question.",
         "My lord, I will go with you to the king.", "The quality of mercy is not strained.",
         "Friends, Romans, countrymen, lend me your ears.",
         "All the world is a stage, and all the men and women merely players.",
         "A horse, a horse, my kingdom for a horse.", "If music be the food of love, play on.",
         "Once more unto the breach, dear friends, once more.", "Good night, good night, parting is such sweet sorrow."]
NOISY = ["--conditions", "noise:snr=5"]  # where tiny.en hears espeak far worse than Piper (WER about +0.5)


def compare(cwd: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "compare-runs", *args], cwd=cwd,
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, models_dir) -> Path:
    """v1: piper:joe; v2: espeak:en-us, a voice tiny.en hears worse in noise; same sentences, engine, condition and
    measures. Each computes its own transcripts and scores into the cache the later runs here share."""
    cwd = tmp_path_factory.mktemp("runs")
    write_sentences(cwd / "s.txt", LINES)
    for run, voice in (("v1", "piper:joe"), ("v2", "espeak:en-us")):
        cli(cwd, "--run", run, "--sentences", "s.txt", "--voices", voice, *TINY, *NOISY, "--measures", "dnsmos",
            models=models_dir, cache=cwd / "cache")
    return cwd


def test_a_worse_voice_fails_the_gate_and_the_page_plays_both(runs, tmp_path):
    proc = compare(runs, "v1", "v2", "--fail-if-worse")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "FAIL" in proc.stderr and "wer: worse" in proc.stderr and "Traceback" not in proc.stderr
    out = runs / "results" / "compare-v1-vs-v2"
    rows = {r["metric"]: r for r in store.read_csv(out / "run_comparison.csv")}
    assert {"wer", "cer", "dnsmos_sig", "dnsmos_bak", "dnsmos_ovrl", "dnsmos_p808"} <= set(rows)
    wer = rows["wer"]
    assert float(wer["delta"]) > 0.01 and float(wer["ci95_low"]) > 0 and float(wer["p_holm"]) < 0.05
    assert wer["worse"] == "True" and int(wer["sentences"]) == len(LINES)
    report = json.loads((out / "run_comparison.json").read_text())
    assert report["unmatched"]["count"] == 0 and "normalizer" in report["evaluator"]
    assert compare(runs, "v1", "v2").returncode == 0  # without the gate, a report only
    from tests.test_report import CHROMIUM, chromium, console_lines

    if CHROMIUM is None:
        pytest.skip("needs Debian chromium (scripts/setup --test)")
    page = chromium(out / "ab.html", tmp_path, "--dump-dom")
    assert page.returncode == 0 and console_lines(page.stderr) == []
    sources = re.findall(r'<audio[^>]*src="([^"]+)"', page.stdout)
    assert len(sources) == 2 * len(LINES)  # both versions of every sentence, side by side, carried in the page
    assert all(src.startswith("data:audio/flac;base64,") for src in sources)
    played = {base64.b64decode(src.removeprefix("data:audio/flac;base64,")) for src in sources}
    for run in ("v1", "v2"):
        for row in store.read_csv(runs / "results" / run / "utterances.csv"):
            samples, _ = sf.read(runs / "results" / run / row["audio_path"], dtype="int16")
            assert any(np.array_equal(sf.read(io.BytesIO(flac), dtype="int16")[0], samples) for flac in played)


def test_a_run_against_a_copy_of_itself_is_no_change(runs):
    shutil.copytree(runs / "results" / "v1", runs / "results" / "v1-copy", dirs_exist_ok=True)
    proc = compare(runs, "v1", "v1-copy", "--fail-if-worse", "--out", "same")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = store.read_csv(runs / "same" / "run_comparison.csv")
    assert rows and all(float(r["delta"]) == 0 and r["worse"] == "False" for r in rows)


def test_a_run_heard_by_another_engine_is_refused(runs, models_dir):
    write_sentences(runs / "two.txt", LINES[:2])  # the engine is refused before any sentence is paired
    cli(runs, "--run", "other", "--sentences", "two.txt", "--voices", "espeak:en-us", "--asr", "faster-whisper:base",
        "--measures", "none", models=models_dir)
    proc = compare(runs, "v1", "other")
    assert proc.returncode == 2 and "faster-whisper:base" in proc.stderr and "Traceback" not in proc.stderr


EDITS = {  # evaluator field: (edit a copy's manifest, what the refusal names)
    "engine model": (lambda m: m["models"]["faster-whisper:tiny.en"]["files"].update(
        {k: "0" * 64 for k in m["models"]["faster-whisper:tiny.en"]["files"]}), "engine faster-whisper:tiny.en"),
    "decoding options": (lambda m: m["config"]["asr"].update(beam_size=5), "decoding options"),
    "normalizer": (lambda m: m["config"]["score"].update(normalize="whisper"), "normalizer"),
    "measure model": (lambda m: m["models"]["dnsmos"]["files"].update(
        {k: "0" * 64 for k in m["models"]["dnsmos"]["files"]}), "measure dnsmos"),
    "scoring revision": (lambda m: m.update(scoring_revision=0), "scoring revision"),
    "an older version": (lambda m: m.pop("scoring_revision"), "--from score --force"),
}


@pytest.mark.parametrize("field", list(EDITS))
def test_each_evaluator_field_refuses_the_comparison(runs, field):
    edit, named = EDITS[field]
    copy = runs / "results" / f"edited-{field.replace(' ', '-')}"
    shutil.copytree(runs / "results" / "v2", copy, dirs_exist_ok=True)
    manifest = json.loads((copy / "manifest.json").read_text())
    edit(manifest)
    store.write_record(copy / "manifest.json", manifest)  # sealed anew: a run made so, not an edited one
    proc = compare(runs, "v1", str(copy))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert named in proc.stderr and "Traceback" not in proc.stderr


def test_partial_overlap_is_counted_and_listed(runs, models_dir):
    """A sentences file's ids are its line numbers: the first 8 lines are shared, the 9th differs, and the 10th
    is only in v1. What is checked is the pairing: the 8 shared lines' transcripts and scores are v1's, from the
    cache."""
    write_sentences(runs / "s2.txt", LINES[:8] + ["Uneasy lies the head that wears a crown."])
    cli(runs, "--run", "part", "--sentences", "s2.txt", "--voices", "piper:joe", *TINY, *NOISY, "--measures",
        "dnsmos", models=models_dir, cache=runs / "cache")
    proc = compare(runs, "v1", "part", "--out", "part-out")
    assert proc.returncode == 0, proc.stderr[-2000:]
    unmatched = {u["sentence_id"]: u["reason"] for u in store.read_csv(runs / "part-out" / "unmatched.csv")}
    assert unmatched == {"l0009": "the reference text differs", "l0010": "only in v1"}
    rows = store.read_csv(runs / "part-out" / "run_comparison.csv")
    assert {int(r["sentences"]) for r in rows} == {8}
    assert "8 sentences paired, 2 not" in proc.stdout


def test_bad_input_is_exit_2(runs, tmp_path):
    (tmp_path / "empty").mkdir()
    for args, named in ((["v1", str(tmp_path / "empty")], "not a run"),
                        (["v1", "nonexistent"], "not a run"),
                        (["v1", "v2", "--margin", "wer=lots"], "--margin")):
        proc = compare(runs, *args)
        assert proc.returncode == 2 and named in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    alone = runs / "results" / "alone"  # a run of other sentences: its files and its seal made so
    shutil.copytree(runs / "results" / "v1", alone, dirs_exist_ok=True)
    rows = store.read_csv(alone / "utterances.csv")
    store.write_csv(alone / "utterances.csv", [{**r, "sentence_id": "x" + r["sentence_id"],
                                                "id": r["id"].replace("_l", "_xl")} for r in rows], list(rows[0]))
    manifest = json.loads((alone / "manifest.json").read_text())
    manifest["sealed"]["utterances.csv"] = store.sha256_file(alone / "utterances.csv")
    store.write_record(alone / "manifest.json", manifest)
    proc = compare(runs, "v1", "alone")
    assert proc.returncode == 2 and "no sentence in common" in proc.stderr
