"""--executor ray: the same results as the local executor, on a local instance and a two-node cluster."""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pipeline import store
from tests.test_pipeline import SENTENCES, TIMING, TINY, cli, write_sentences

ray = pytest.importorskip("ray", reason="needs the ray extra (scripts/setup --test)")
RAY = str(Path(sys.executable).parent / "ray")
CSVS = ("synthesis.csv", "transcripts.csv", "utterances.csv", "errors.csv", "confusions.csv", "summary.csv")


def same_results(a: Path, b: Path) -> None:
    for name in CSVS:
        strip = lambda rows: [{k: v for k, v in r.items() if k not in TIMING} for r in rows]  # noqa: E731
        assert strip(store.read_csv(a / name)) == strip(store.read_csv(b / name)), name
    for name in ("ref.trn", "hyp.trn"):
        assert (a / name).read_bytes() == (b / name).read_bytes()


def nodes_used(run: Path) -> set[str]:
    sidecars = list((run.parent.parent / "audio").rglob("*.json")) + list((run / "transcripts").rglob("*.json"))
    return {store.read_json(p).get("node") for p in sidecars} - {None}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ray_with_one_or_two_actors_gives_the_local_executors_csvs(tmp_path, models_dir):
    sentences = write_sentences(tmp_path / "s.txt")
    engines = ["--asr", "faster-whisper:tiny.en,openai-whisper:tiny.en"]
    runs = {"local": [], "ray1": ["--executor", "ray", "--set", "executor.num_cpus=2", "--set", "executor.actors=1"],
            "ray2": ["--executor", "ray", "--set", "executor.num_cpus=2", "--set", "executor.actors=2"]}
    for name, extra in runs.items():
        (tmp_path / name).mkdir()
        cli(tmp_path / name, "--sentences", str(sentences), *engines, "--conditions", "clean,noise:snr=10",
            "--set", "speech.batch_size=2", *extra, models=models_dir)
    local = tmp_path / "local" / "results" / "default"
    assert len(store.read_csv(local / "utterances.csv")) == 2 * 2 * len(SENTENCES)
    wavs = lambda root: {p.relative_to(root): p.read_bytes() for p in (root / "audio").rglob("*.wav")}  # noqa: E731
    for name in ("ray1", "ray2"):
        same_results(local, tmp_path / name / "results" / "default")
        assert wavs(tmp_path / "local") == wavs(tmp_path / name)
    two = tmp_path / "ray2" / "results" / "default"
    assert len({store.read_json(p)["pid"] for p in (two / "transcripts").rglob("*.json")}) >= 2


def test_a_ray_run_resumes_from_a_local_one(tmp_path, models_dir):
    lines = SENTENCES[:4]
    write_sentences(tmp_path / "s.txt", lines)
    cli(tmp_path, "--sentences", "s.txt", *TINY, models=models_dir)
    write_sentences(tmp_path / "s.txt", lines + ["A fifth line joins the run."])
    proc = cli(tmp_path, "--sentences", "s.txt", *TINY, "--executor", "ray", "--set", "executor.num_cpus=2",
               models=models_dir)
    manifest = store.read_json(tmp_path / "results" / "default" / "manifest.json")
    assert manifest["stage_results"]["synthesize"]["reused"] == 4
    assert manifest["stage_results"]["transcribe"]["reused"] == 4
    assert proc.returncode == 0


@pytest.fixture
def two_node_cluster(monkeypatch):
    port = free_port()
    common = ["--num-cpus", "1", "--node-ip-address", "127.0.0.1", "--disable-usage-stats"]
    # A short temp dir (Ray's Unix sockets live there, and socket paths are limited to 107 bytes), and no token
    # auth: a loopback-only test cluster, and a token left in ~/.ray by another cluster would not match.
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    env = {**os.environ, "RAY_TMPDIR": tempfile.mkdtemp(prefix="ray", dir="/tmp")}
    subprocess.run([RAY, "start", "--head", "--port", str(port), "--include-dashboard", "false", *common],
                   check=True, capture_output=True, env=env)
    try:
        subprocess.run([RAY, "start", "--address", f"127.0.0.1:{port}", *common], check=True, capture_output=True,
                       env=env)
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([RAY, "stop", "--force"], capture_output=True, env=env)


def test_two_node_cluster_shares_the_work(tmp_path, models_dir, two_node_cluster):
    sentences = write_sentences(tmp_path / "s.txt")
    cli(tmp_path, "--sentences", str(sentences), *TINY, "--set", "speech.batch_size=1", "--executor", "ray",
        "--ray-address", two_node_cluster, models=models_dir)
    run = tmp_path / "results" / "default"
    rows = store.read_csv(run / "utterances.csv")
    assert len(rows) == len(SENTENCES) and all(r["status"] == "ok" for r in rows)
    assert len(nodes_used(run)) == 2
    assert "items per node" in (run / "run.log").read_text()


def test_a_killed_worker_is_restarted_and_nothing_is_lost_or_duplicated(tmp_path, models_dir):
    lines = [f"{s} Line {i}." for i, s in enumerate(SENTENCES * 3)]
    write_sentences(tmp_path / "s.txt", lines)
    args = [sys.executable, str(Path(__file__).parents[1] / "run_pipeline.py"), "--set", f"models_dir={models_dir}",
            "--sentences", "s.txt", *TINY, "--executor", "ray", "--set", "executor.num_cpus=2"]
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TQDM_DISABLE": "1"})
    victim, deadline = None, time.time() + 180
    while victim is None and time.time() < deadline and proc.poll() is None:
        done = list((tmp_path / "audio").rglob("*.json"))
        if len(done) >= 3:
            victim = store.read_json(done[0])["pid"]
        time.sleep(0.05)
    assert victim and victim != proc.pid
    os.kill(victim, signal.SIGKILL)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-2000:]
    rows = store.read_csv(tmp_path / "results" / "default" / "utterances.csv")
    assert sorted(r["sentence_id"] for r in rows) == [f"l{i:04d}" for i in range(1, len(lines) + 1)]
    assert all(r["status"] == "ok" for r in rows)
    pids = {store.read_json(p)["pid"] for p in (tmp_path / "audio").rglob("*.json")}
    assert victim in pids and len(pids) >= 2  # the dead worker's items are kept; a new one took over


def test_without_ray_the_message_says_how_to_install(tmp_path):
    code = ("import sys; sys.modules['ray'] = None; from pipeline.cli import main; "
            "sys.exit(main(['--print-config', '--executor', 'ray']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).parents[1])
    assert proc.returncode == 2 and "pip install -e '.[ray]'" in proc.stderr
