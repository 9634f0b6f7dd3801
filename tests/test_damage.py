"""Damaged files are detected, not used: each kind of cached file truncated or corrupted after a run, then a rerun
that must equal the clean run; and a full disk that stops the run with exit 4 and leaves no torn file."""
import io
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.core import store
from tests.helpers import (NO_MEASURES, OWN_CACHE, ROOT, SENTENCES, SMALL_LM, TINY, cli, rows_without_timing,
                           write_sentences)

pytestmark = pytest.mark.slow  # real models and pipeline runs: left out of `pytest -m "not slow"`

CSVS = ("sentences.csv", "synthesis.csv", "transcripts.csv", "utterances.csv", "errors.csv", "summary.csv")


def snapshot(cwd: Path) -> dict:
    run = cwd / "results" / "default"
    out = {name: rows_without_timing(run / name) for name in CSVS}
    out["wavs"] = {p.relative_to(cwd): p.read_bytes() for p in (cwd / "audio").rglob("*.wav")}
    return out


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:path.stat().st_size // 2])


def corrupt(path: Path) -> None:
    """Same size, some bytes flipped in the middle: only a hash can tell."""
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 8] = bytes(b ^ 0x5A for b in data[mid:mid + 8])
    path.write_bytes(bytes(data))


ARGS = [*SMALL_LM, *TINY, *NO_MEASURES, "--conditions", "clean,noise:snr=10"]


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory) -> Path:
    """A finished run with its own models/, so that the checkpoint damaged here is no other test's. Each test
    damages a copy: a run folder moved elsewhere is up to date there."""
    cwd = tmp_path_factory.mktemp("clean")
    cli(cwd, *ARGS, models=cwd / "models")
    return cwd


@pytest.mark.parametrize("damage", [truncate, corrupt], ids=["truncated", "corrupted"])
def test_every_kind_of_damaged_file_is_redone_and_the_rerun_equals_a_clean_run(tmp_path, clean_run, damage):
    shutil.copytree(clean_run, tmp_path, dirs_exist_ok=True)
    models = tmp_path / "models"
    args = [*ARGS, "--set", f"models_dir={models}", *OWN_CACHE]
    clean = snapshot(tmp_path)
    audio, run = tmp_path / "audio" / "default", tmp_path / "results" / "default"
    victims = {
        "a clean wav": sorted((audio / "piper:joe" / "clean").glob("*.wav"))[0],
        "a noisy wav": sorted((audio / "piper:joe" / "noise:snr=10").glob("*.wav"))[-1],
        "a wav sidecar": sorted((audio / "piper:joe" / "clean").glob("*.json"))[-1],
        "a transcript": sorted((run / "transcripts").rglob("*.json"))[0],
        "the transcripts table": run / "transcripts.csv",
        "the sentences table": run / "sentences.csv",
        "a stage's state": run / ".stages" / "score.json",
        "the LM checkpoint": next(models.glob("lm-*/ckpt.pt")),
        "the training tokens": next(models.glob("data-*/train.bin")),
        "an attention map": sorted((run / "attention").glob("*.npz"))[0],
    }
    ckpt_before = victims["the LM checkpoint"].read_bytes()
    for path in victims.values():
        damage(path)
    index = run / "attention" / "index.json"
    attention_before = index.read_text()
    index.write_text('{"sentences": ["valid JSON, not an index"]}')
    proc = cli(tmp_path, *args, models=models)
    assert {"train", "attention", "synthesize", "transcribe", "score"} <= set(
        line.split(": running")[0].split()[-1] for line in proc.stderr.splitlines() if ": running" in line)
    assert snapshot(tmp_path) == clean and index.read_text() == attention_before
    import torch  # trained again, to the same weights

    before = torch.load(io.BytesIO(ckpt_before), weights_only=False)["model"]
    after = torch.load(victims["the LM checkpoint"], weights_only=False)["model"]
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    assert store.read_record(victims["a wav sidecar"])["wav_sha256"] == store.sha256_file(
        victims["a wav sidecar"].with_suffix(".wav"))


def test_a_full_disk_stops_with_exit_4_leaves_no_torn_file_and_a_rerun_completes(tmp_path, models_dir):
    sentences = write_sentences(tmp_path / "s.txt", SENTENCES[:3])
    (tmp_path / "full").mkdir()
    (tmp_path / "clean").mkdir()
    limit = 48 * 1024  # smaller than one wav: the first one cannot be written

    def small_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    cmd = [sys.executable, str(ROOT / "run_pipeline.py"), "--set", f"models_dir={models_dir}", *OWN_CACHE,
           "--sentences", str(sentences), *TINY, *NO_MEASURES]
    proc = subprocess.run(cmd, cwd=tmp_path / "full", capture_output=True, text=True, preexec_fn=small_disk,
                          env={**os.environ, "TQDM_DISABLE": "1"})
    assert proc.returncode == 4, proc.stderr[-2000:]
    assert "cannot write" in proc.stderr and ".wav" in proc.stderr and "Traceback" not in proc.stderr
    assert not list((tmp_path / "full").rglob("*.tmp")) and not list((tmp_path / "full").rglob(".*.tmp"))
    assert not list((tmp_path / "full" / "audio").rglob("*.wav"))  # nothing half-written under a final name
    cli(tmp_path / "full", "--sentences", str(sentences), *TINY, *NO_MEASURES, models=models_dir)  # space is back
    cli(tmp_path / "clean", "--sentences", str(sentences), *TINY, *NO_MEASURES, models=models_dir)
    assert snapshot(tmp_path / "full") == snapshot(tmp_path / "clean")
