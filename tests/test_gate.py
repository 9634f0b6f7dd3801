"""A TTS team's first hour and its release gate, as the team meets them: two versions of a voice in
seed-tts-eval's layout (meta.lst with a prompt wav, one folder of generated wavs per version, one wav of v2
missing), scored with the seed-tts-eval preset on another engine, then compared. Real runs, real files."""
import base64
import fcntl
import html
import io
import json
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pipeline.core import store
from tests.helpers import NO_MEASURES, ROOT, cli, probed, stage_status
from tests.listening import LINES, MEASURED, RUN, shared_team

pytestmark = pytest.mark.slow

MISSING = "en_0005"
RECIPE = RUN  # seed-tts-eval's preset on tiny.en, from meta.lst, with DNSMOS and speaker similarity


def compare(cwd: Path, *args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "compare-runs", *args], cwd=cwd,
                          capture_output=True, text=True, **kwargs)


@pytest.fixture(scope="module")
def team(tmp_path_factory, worker_id, models_dir) -> tuple[Path, subprocess.CompletedProcess]:
    """The listening modules' team (tests/listening.py: meta.lst, out/v1 spoken by Piper joe, out/v2 by espeak, one
    prompt wav) with v2's wav of MISSING taken away; each version scored in its own run from its folder alone,
    through the team's cache. What is checked here is what the runs and the gate tell: the transcripts and scores
    are the listening team's, computed once for every module that reads them."""
    cwd = shared_team(tmp_path_factory, worker_id, models_dir)
    shutil.rmtree(cwd / "results")
    (cwd / "out" / "v2" / f"{MISSING}.wav").unlink()
    cli(cwd, *RECIPE, "--audio-dir", "out/v1", "--run", "v1", models=models_dir, cache=cwd / "cache")
    v2 = cli(cwd, *RECIPE, "--audio-dir", "out/v2", "--run", "v2", models=models_dir, cache=cwd / "cache", check=False)
    return cwd, v2


def test_the_first_run_names_every_file_that_went_wrong_and_what_its_wer_compares_with(team):
    cwd, proc = team
    assert proc.returncode == 1, proc.stderr[-3000:]
    run = cwd / "results" / "v2"
    told = proc.stdout
    assert f"1 of {len(LINES)} rows failed" in told and f"{MISSING} (v2, clean, faster-whisper:tiny.en)" in told
    assert f"out/v2/{MISSING}.wav: no such audio file" in told and "every failed row: results/v2/utterances.csv" in told
    assert f"1 of {len(LINES)} rows failed" in (run / "run.log").read_text()
    head, rule, row = told.splitlines()[:3]
    assert "excluded" in head and "macro 95% CI" in head and row.split()[:5] == ["v2", "faster-whisper:tiny.en",
                                                                                  "clean", str(len(LINES) - 1), "1"]
    departure = "asr.engines faster-whisper:tiny.en instead of faster-whisper:large-v3"
    assert f"WER: seed-tts-eval recipe except {departure}: WER not comparable" in told
    assert "speaker_sim here is Resemblyzer's GE2E" in told
    comparable = store.read_json(run / "summary.json")["comparable"]
    assert comparable["recipe"] == "seed-tts-eval" and comparable["departures"] == [departure]
    assert not comparable["exact"]
    rows = store.read_csv(run / "utterances.csv")
    assert {r["voice"] for r in rows} == {"v2"}  # the folder names the system
    for r in rows:  # audio_path and speaker_reference resolve from the run folder, wherever it is read from
        assert r["audio_path"] and ((run / r["audio_path"]).is_file() == (r["status"] == "ok"))
        if r["status"] == "ok":
            assert (run / r["speaker_reference"]).resolve() == (cwd / "prompts" / "p.wav").resolve()
    summary = store.read_csv(run / "summary.csv")[0]
    assert float(summary["macro_ci95_low"]) <= float(summary["macro_wer"]) <= float(summary["macro_ci95_high"])
    page = (run / "report.html").read_text()
    assert "Comparable with:</b> seed-tts-eval recipe except" in page
    shown = html.unescape(page[page.index("<h2>Config and versions</h2>"):])
    assert '"audio_manifest": "meta.lst"' in shown and '"asr"' in shown
    assert '"voices"' not in shown and '"max_iters"' not in shown  # a run of recordings synthesizes nothing
    assert "perplexity quartile" not in page and "WER by reference length" in page  # it has no LM


def test_an_up_to_date_rerun_still_tells_the_summary_and_a_torn_wav_is_an_error_that_loads_no_model(team, models_dir):
    cwd, first = team
    again = cli(cwd, *RECIPE, "--audio-dir", "out/v2", "--run", "v2", models=models_dir, cache=cwd / "cache",
                check=False)
    assert again.returncode == 1 and again.stdout == first.stdout  # every line of the summary, the path too
    assert {s for name, s in stage_status(cwd, "v2").items() if name != "recordings"} == {"up to date"}
    torn = cwd / "out" / "torn"
    shutil.copytree(cwd / "out" / "v1", torn)
    whole = (torn / "en_0002.wav").read_bytes()
    (torn / "en_0002.wav").write_bytes(whole[:len(whole) // 2])  # the header still promises every sample
    args = [*RECIPE, *NO_MEASURES, "--audio-dir", "out/torn", "--run", "torn"]  # its transcripts are what is checked
    proc = cli(cwd, *args, models=models_dir, check=False)
    assert proc.returncode == 1 and "en_0002 (torn, clean, faster-whisper:tiny.en)" in proc.stdout
    assert "torn: its header promises" in proc.stdout
    log = cwd / "results" / "torn" / "run.log"
    size = log.stat().st_size
    proc = cli(cwd, *args, models=models_dir, check=False)
    assert proc.returncode == 1 and "torn: its header promises" in proc.stdout
    rerun = log.read_text()[size:]
    assert "transcribe: trying again the 1 items" in rerun and "to compute" not in rerun  # read, not decoded


def test_a_folder_that_matches_no_wav_is_exit_2_before_any_model(team, models_dir):
    cwd, _ = team
    other = cwd / "out" / "renamed"
    other.mkdir()
    for i, wav in enumerate(sorted((cwd / "out" / "v1").glob("*.wav"))):
        shutil.copy(wav, other / f"utt{i}.wav")
    t0 = time.perf_counter()
    proc = cli(cwd, *RECIPE, "--audio-dir", "out/renamed", "--run", "renamed", models=models_dir, check=False)
    assert proc.returncode == 2 and time.perf_counter() - t0 < 30, proc.stderr[-2000:]
    assert "out/renamed" in proc.stderr and "en_0000.wav" in proc.stderr and "utt0.wav" in proc.stderr
    assert "Traceback" not in proc.stderr and not (cwd / "results" / "renamed").exists()


def test_the_gate_and_its_page_played_alone_with_the_prompt(team, tmp_path):
    cwd, _ = team
    proc = compare(cwd, "v1", "v2", "--fail-if-worse")
    # espeak's DNSMOS is below Piper's on every line both have: the exact paired test at its floor, 2/2⁹, which
    # Holm's seven metrics raise to 0.027, under 0.05: the gate fails, whatever the WER says
    ovrl = {run: {r["sentence_id"]: float(r["dnsmos_ovrl"]) for r in store.read_csv(
        cwd / "results" / run / "utterances.csv") if r["status"] == "ok"} for run in ("v1", "v2")}
    assert len(ovrl["v2"]) == len(LINES) - 1 and all(ovrl["v2"][s] < ovrl["v1"][s] for s in ovrl["v2"])
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert any(line.startswith("FAIL") and "dnsmos_ovrl: worse" in line and "p = 0.0273" in line
               for line in proc.stderr.splitlines()), proc.stderr
    out = cwd / "results" / "compare-v1-vs-v2"
    rows = {r["metric"]: r for r in store.read_csv(out / "run_comparison.csv")}
    assert {"macro_wer", "cer", "dnsmos_ovrl", "speaker_sim"} <= set(rows) and "wer" not in rows  # the headline
    for r in rows.values():
        assert int(r["sentences"]) == len(LINES) - 1 and float(r["detectable_delta"]) > 0
        if "no significant difference" in r["verdict"]:
            assert f"{len(LINES) - 1} sentences detect |Δ| ≥" in r["verdict"] and int(r["sentences_needed"]) >= 2
    assert "speaker_sim compares with other runs of this tool only" in proc.stdout
    from tests.test_report import CHROMIUM, chromium

    if CHROMIUM is None:
        pytest.skip("needs Debian chromium (scripts/setup --test)")
    alone = tmp_path / "uploaded"
    alone.mkdir()
    probe = ("const a=[...document.querySelectorAll('audio')];let n=0;a.forEach(x=>{x.preload='auto';"
             "x.addEventListener('loadedmetadata',()=>{n++;document.body.dataset.decoded=n});x.load()});")
    page = (out / "ab.html").read_text()
    assert "speaker reference" in page and "dnsmos_ovrl" in page and "speaker_sim" in page  # every gated metric
    (alone / "ab.html").write_text(probed(page, probe))
    dom = chromium(alone / "ab.html", tmp_path, "--dump-dom", "--autoplay-policy=no-user-gesture-required").stdout
    decoded = re.search(r'data-decoded="(\d+)"', dom)
    assert decoded and int(decoded.group(1)) == 3 * (len(LINES) - 1), dom[-500:]  # A, B and the prompt, each line
    sources = re.findall(r'<audio[^>]*src="([^"]+)"', dom)
    prompt, _ = sf.read(cwd / "prompts" / "p.wav", dtype="int16")
    played = [sf.read(io.BytesIO(base64.b64decode(s.removeprefix("data:audio/flac;base64,"))), dtype="int16")[0]
              for s in sources]
    assert sum(np.array_equal(p, prompt) for p in played) == len(LINES) - 1


def test_both_versions_in_one_run_reuse_every_transcript_and_pair_by_system_name(team, models_dir):
    cwd, _ = team
    proc = cli(cwd, *RECIPE, "--audio-dir", "v1=out/v1,v2=out/v2", "--run", "both", models=models_dir,
               cache=cwd / "cache", check=False)
    assert proc.returncode == 1, proc.stderr[-2000:]
    results = store.read_json(cwd / "results" / "both" / "manifest.json")["stage_results"]
    heard = 2 * len(LINES) - 1
    assert results["transcribe"]["reused"] == results["transcribe"]["ok"] == heard  # heard once, in v1 and v2
    assert results["assess"]["reused"] == len(MEASURED) * heard  # each measure
    for version in ("v1", "v2"):
        mine = {r["sentence_id"]: r["hypothesis"] for r in store.read_csv(cwd / "results" / version / "utterances.csv")}
        theirs = {r["sentence_id"]: r["hypothesis"] for r in store.read_csv(cwd / "results" / "both" / "utterances.csv")
                  if r["voice"] == version}
        assert mine == theirs
    proc = compare(cwd, "v1", "both", "--out", "v1-in-both")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = store.read_csv(cwd / "v1-in-both" / "run_comparison.csv")
    assert {(r["voice_a"], r["voice_b"]) for r in rows} == {("v1", "v1")}
    assert all(float(r["delta"]) == 0 for r in rows)


def copy_of(cwd: Path, run: str, name: str) -> Path:
    copy = cwd / "results" / name
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(cwd / "results" / run, copy)
    return copy


def test_an_edited_or_torn_run_is_refused_naming_the_file(team):
    cwd, _ = team
    edited = copy_of(cwd, "v2", "edited")
    rows = store.read_csv(edited / "utterances.csv")
    rows[0]["wer"] = "0.0"
    store.write_csv(edited / "utterances.csv", rows, list(rows[0]))
    torn = copy_of(cwd, "v2", "torn-copy")
    text = (torn / "utterances.csv").read_text()
    (torn / "utterances.csv").write_text(text[:len(text) // 2])  # cut off mid-line
    unsealed = copy_of(cwd, "v2", "unsealed")
    manifest = json.loads((unsealed / "manifest.json").read_text())
    manifest["config"]["score"]["normalize"] = "none"
    (unsealed / "manifest.json").write_text(json.dumps(manifest))
    for run, named in (("edited", "edited/utterances.csv: edited or torn"),
                       ("torn-copy", "torn-copy/utterances.csv: edited or torn"),
                       ("unsealed", "unsealed/manifest.json: changed since the run wrote it")):
        proc = compare(cwd, "v1", run, "--fail-if-worse")
        assert proc.returncode == 2 and named in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_bad_options_are_exit_2_and_name_the_fix(team):
    cwd, _ = team
    (cwd / "a-file").write_text("")
    for args, named in ((["--out", "a-file"], "a file, not a folder"),
                        (["--out", "results/v2/comparison"], "inside run v2's folder"),
                        (["--margin", "speaker-sim=0.5"], "did you mean speaker_sim?"),
                        (["--margin", "wer=0.02"], "did you mean macro_wer?")):  # the runs' headline is macro
        proc = compare(cwd, "v1", "v2", "--fail-if-worse", *args)
        assert proc.returncode == 2 and named in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (cwd / "results" / "v2" / "comparison").exists()


def locked(path: Path) -> bool:
    with open(path) as f:
        try:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
    return False


def test_a_run_being_written_is_refused_or_waited_for(team, models_dir):
    cwd, _ = team
    argv = [sys.executable, str(ROOT / "run_pipeline.py"), "--set", f"models_dir={models_dir}", "--set",
            "cache_dir=off", *RECIPE, "--audio-dir", "out/v2", "--run", "v3"]
    run = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lock = cwd / "results" / "v3" / ".lock"
    deadline = time.monotonic() + 60
    while not (lock.is_file() and locked(lock)) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc = compare(cwd, "v1", "v3", "--fail-if-worse")
    assert proc.returncode == 3 and "is being written by pid" in proc.stderr and "--wait" in proc.stderr, proc.stderr
    proc = compare(cwd, "v1", "v3", "--fail-if-worse", "--wait", "600")
    assert run.wait(timeout=60) == 1  # the wait ended when the run did, with the run's own exit code
    # v3 holds v2's wavs, scored alike: v2's verdict (test_the_gate_and_its_page_played_alone_with_the_prompt)
    assert proc.returncode == 1 and "sentences paired" in proc.stdout, proc.stderr[-2000:]


def test_an_unwritable_output_is_4_and_an_internal_error_is_70_never_a_verdict(team):
    cwd, _ = team

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, 50_000))  # ab.html carries its audio: far more

    proc = compare(cwd, "v1", "v2", "--fail-if-worse", "--out", "limited", preexec_fn=small_files)
    assert proc.returncode == 4 and "cannot write --out limited" in proc.stderr and "Traceback" not in proc.stderr
    odd = copy_of(cwd, "v2", "odd")  # sealed as the tool seals, holding what no version of it writes
    manifest = json.loads((odd / "manifest.json").read_text())
    manifest["config"]["asr"]["engines"] = 5
    store.write_record(odd / "manifest.json", manifest)
    proc = compare(cwd, "v1", "odd", "--fail-if-worse")
    assert proc.returncode == 70 and "internal error (exit 70)" in proc.stderr and "Please report" in proc.stderr
    assert "Traceback" in proc.stderr  # with what to report
