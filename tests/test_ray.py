"""--executor ray: the same results as the local executor, on a local instance and a two-node cluster."""
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pipeline.core import store
from tests.helpers import NO_MEASURES, OWN_CACHE, SENTENCES, TINY, cli, rows_without_timing, write_sentences

pytestmark = pytest.mark.slow  # real models and pipeline runs: left out of `pytest -m "not slow"`

ray = pytest.importorskip("ray", reason="needs the ray extra (scripts/setup --test)")
RAY = str(Path(sys.executable).parent / "ray")
CSVS = ("synthesis.csv", "transcripts.csv", "measures.csv", "utterances.csv", "errors.csv", "confusions.csv",
        "summary.csv", "measure_summary.csv")


def same_results(a: Path, b: Path) -> None:
    for name in CSVS:
        assert rows_without_timing(a / name) == rows_without_timing(b / name), name
    for name in ("ref.trn", "hyp.trn"):
        assert (a / name).read_bytes() == (b / name).read_bytes()


def nodes_used(run: Path) -> set[str]:
    sidecars = list((run.parent.parent / "audio").rglob("*.json")) + list((run / "transcripts").rglob("*.json"))
    return {store.read_json(p).get("node") for p in sidecars} - {None}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ray_with_two_actors_gives_the_local_executors_csvs(tmp_path, models_dir):
    # three sentences, each heard clean and in noise by two engines, two clips a batch: work for both actors
    sentences = write_sentences(tmp_path / "s.txt", SENTENCES[:3])
    engines = ["--asr", "faster-whisper:tiny.en,openai-whisper:tiny.en"]
    runs = {"local": [], "ray2": ["--executor", "ray", "--set", "executor.num_cpus=2", "--set", "executor.actors=2"]}
    for name, extra in runs.items():
        (tmp_path / name).mkdir()
        cli(tmp_path / name, "--sentences", str(sentences), *engines, "--conditions", "clean,noise:snr=10",
            "--set", "asr.batch_size=2", *extra, models=models_dir)
    local = tmp_path / "local" / "results" / "default"
    assert len(store.read_csv(local / "utterances.csv")) == 2 * 2 * 3
    wavs = lambda root: {p.relative_to(root): p.read_bytes() for p in (root / "audio").rglob("*.wav")}  # noqa: E731
    same_results(local, tmp_path / "ray2" / "results" / "default")
    assert wavs(tmp_path / "local") == wavs(tmp_path / "ray2")
    two = tmp_path / "ray2" / "results" / "default"
    assert len({store.read_json(p)["pid"] for p in (two / "transcripts").rglob("*.json")}) >= 2
    security = store.read_json(two / "manifest.json")["executor"]  # a local instance keeps Ray's default
    assert security["address"] == "local instance"
    assert security["auth_mode"] == os.environ.get("RAY_AUTH_MODE", "token").lower()


def test_a_ray_run_resumes_from_a_local_one(tmp_path, models_dir):
    lines = SENTENCES[:4]
    write_sentences(tmp_path / "s.txt", lines)
    cli(tmp_path, "--sentences", "s.txt", *TINY, "--measures", "none", models=models_dir)
    write_sentences(tmp_path / "s.txt", lines + ["A fifth line joins the run."])
    proc = cli(tmp_path, "--sentences", "s.txt", *TINY, "--measures", "none", "--executor", "ray", "--set",
               "executor.num_cpus=2", models=models_dir)
    manifest = store.read_json(tmp_path / "results" / "default" / "manifest.json")
    assert manifest["stage_results"]["synthesize"]["reused"] == 4
    assert manifest["stage_results"]["transcribe"]["reused"] == 4
    assert proc.returncode == 0


def test_a_killed_worker_is_restarted_and_nothing_is_lost_or_duplicated(tmp_path, models_dir):
    lines = [f"{s} Line {i}." for i, s in enumerate(SENTENCES * 3)]
    write_sentences(tmp_path / "s.txt", lines)
    args = [sys.executable, str(Path(__file__).parents[1] / "run_pipeline.py"), "--set", f"models_dir={models_dir}", *OWN_CACHE,
            "--sentences", "s.txt", *TINY, "--measures", "none", "--executor", "ray", "--set", "executor.num_cpus=2"]
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


@contextlib.contextmanager
def cluster(env: dict, nodes: int = 2):
    """`nodes` nodes on loopback, one CPU each, started as the README's recipe says (auth from `env`, never argv);
    yields its address and the driver's environment. Each `ray start` leads a process group of its own, which its
    daemons and their workers inherit: stopping the cluster kills those groups alone (with SIGKILL, as
    `ray stop --force`, which would kill every Ray process on the machine, another worker's runs too)."""
    port = free_port()
    # A short temp dir: Ray's Unix sockets live there, and socket paths are limited to 107 bytes.
    env = {**env, "RAY_TMPDIR": tempfile.mkdtemp(prefix="ray", dir="/tmp")}
    common = ["--num-cpus", "1", "--node-ip-address", "127.0.0.1", "--disable-usage-stats"]
    groups = []
    try:
        head = ["--head", "--port", str(port), "--include-dashboard", "false"]
        for argv in [head] + [["--address", f"127.0.0.1:{port}"]] * (nodes - 1):
            node = subprocess.Popen([RAY, "start", *argv, *common], env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, start_new_session=True)
            groups.append(node.pid)
            told = node.communicate(timeout=300)[0]
            assert node.returncode == 0, told[-2000:]
        yield f"127.0.0.1:{port}", env
    finally:
        for group in groups:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while any(group_alive(g) for g in groups) and time.monotonic() < deadline:
            time.sleep(0.1)


def group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def token_cluster(tmp_path_factory):
    """A cluster with token authentication on; yields its address and a driver environment holding the token."""
    home = tmp_path_factory.mktemp("home")  # the nodes' and the driver's ~, so no token of the user's is used
    env = {**os.environ, "HOME": str(home), "RAY_AUTH_MODE": "token"}
    env.pop("RAY_AUTH_TOKEN", None)
    env.pop("RAY_AUTH_TOKEN_PATH", None)
    subprocess.run([RAY, "get-auth-token", "--generate"], check=True, capture_output=True, env=env)
    assert (home / ".ray" / "auth_token").stat().st_size >= 32
    with cluster(env) as (address, env):
        yield address, env


@pytest.fixture(scope="module")
def open_cluster():
    """A cluster started without token authentication, one node: what the pipeline must refuse by default."""
    with cluster({**os.environ, "RAY_AUTH_MODE": "disabled"}, nodes=1) as (address, env):
        yield address, env


def test_two_node_cluster_with_token_auth_shares_the_work(tmp_path, models_dir, token_cluster):
    address, env = token_cluster
    sentences = write_sentences(tmp_path / "s.txt")
    cli(tmp_path, "--sentences", str(sentences), *TINY, *NO_MEASURES, "--set", "asr.batch_size=1", "--executor",
        "ray", "--ray-address", address, models=models_dir, env=env)
    run = tmp_path / "results" / "default"
    rows = store.read_csv(run / "utterances.csv")
    assert len(rows) == len(SENTENCES) and all(r["status"] == "ok" for r in rows)
    assert len(nodes_used(run)) == 2
    assert "items per node" in (run / "run.log").read_text()
    security = store.read_json(run / "manifest.json")["executor"]
    assert security["auth_mode"] == "token" and security["allow_insecure"] is False


@pytest.mark.parametrize("driver", ["no token", "wrong token", "token mode off"])
def test_a_driver_without_the_clusters_token_is_refused_clearly(tmp_path, models_dir, token_cluster, driver):
    address, env = token_cluster
    if driver == "no token":
        env = {**env, "HOME": str(tmp_path)}
    elif driver == "wrong token":
        (tmp_path / "token").write_text("0" * 32)
        env = {**env, "RAY_AUTH_TOKEN_PATH": str(tmp_path / "token")}
    else:
        env = {k: v for k, v in env.items() if k != "RAY_AUTH_MODE"}
    sentences = write_sentences(tmp_path / "s.txt", SENTENCES[:1])
    proc = cli(tmp_path, "--sentences", str(sentences), *TINY, "--executor", "ray", "--ray-address", address,
               models=models_dir, env=env, check=False)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and address in proc.stderr
    assert ("RAY_AUTH_MODE=token" if driver == "token mode off" else "auth_token") in proc.stderr
    assert not (tmp_path / "audio").exists()  # refused before any work


def test_a_cluster_without_auth_is_refused_unless_allowed(tmp_path, models_dir, open_cluster):
    address, env = open_cluster
    sentences = write_sentences(tmp_path / "s.txt", SENTENCES[:2])
    args = ["--sentences", str(sentences), *TINY, *NO_MEASURES, "--executor", "ray", "--ray-address", address]
    proc = cli(tmp_path, *args, models=models_dir, env=env, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "no token authentication" in proc.stderr and "run any code" in proc.stderr
    assert "RAY_AUTH_MODE=token" in proc.stderr and "executor.allow_insecure=true" in proc.stderr
    assert not (tmp_path / "audio").exists()
    cli(tmp_path, *args, "--set", "executor.allow_insecure=true", models=models_dir, env=env)
    run = tmp_path / "results" / "default"
    assert all(r["status"] == "ok" for r in store.read_csv(run / "utterances.csv"))
    security = store.read_json(run / "manifest.json")["executor"]
    assert security["auth_mode"] == "disabled" and security["allow_insecure"] is True
