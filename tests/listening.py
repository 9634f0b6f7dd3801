"""What the listening-test modules share: a team's two versions of a voice scored in two real runs, a test made
from them with the real command, its server started as a user starts it, and a listener that speaks to it over
real HTTP as the page's script does."""
from __future__ import annotations

import contextlib
import os
import sqlite3
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.helpers import ROOT, built_once, cli

LINES = ["Now is the winter of our discontent.", "To be, or not to be, that is the question.",
         "My lord, I will go with you to the king.", "The quality of mercy is not strained.",
         "Friends, Romans, countrymen, lend me your ears.", "A horse, a horse, my kingdom for a horse.",
         "If music be the food of love, play on.", "All that glisters is not gold.",
         "Brevity is the soul of wit.", "The lady doth protest too much, methinks."]  # ten: enough for a gate
HOSTILE = "<script>alert('x')</script>"  # in the first line's reference text, and in the test's name
MEASURED = ("dnsmos", "speaker_sim")
RUN = ["--preset", "seed-tts-eval", "--asr", "faster-whisper:tiny.en", "--audio-manifest", "meta.lst",
       "--measures", ",".join(MEASURED)]


def team(cwd: Path, models: Path) -> Path:
    """results/v1 (Piper joe) and results/v2 (espeak), each scored from its own folder of wavs, one prompt wav."""
    from pipeline.io import audio
    from pipeline.tts import base

    (cwd / "prompts").mkdir(parents=True)
    joe, espeak = base.load("piper:joe"), base.load("espeak:en-us")
    audio.write_wav(cwd / "prompts" / "p.wav", *espeak.synthesize("This is the voice you should sound like."))
    lines = []
    for i, text in enumerate(LINES):
        uid = f"en_{i:04d}"
        lines.append(f"{uid}|This is the voice you should sound like.|prompts/p.wav|{text}"
                     f"{' ' + HOSTILE if i == 0 else ''}\n")
        audio.write_wav(cwd / "out" / "v1" / f"{uid}.wav", *joe.synthesize(text))
        audio.write_wav(cwd / "out" / "v2" / f"{uid}.wav", *espeak.synthesize(text))
    (cwd / "meta.lst").write_text("".join(lines))
    for version in ("v1", "v2"):
        cli(cwd, *RUN, "--audio-dir", f"out/{version}", "--run", version, models=models, cache=cwd / "cache")
    return cwd


def shared_team(tmp_path_factory, worker_id: str, models: Path) -> Path:
    """team(), made once for all workers and copied into this module's own folder (helpers.built_once): the
    listening modules run side by side without each making the same two runs."""
    return built_once(tmp_path_factory, worker_id, "listening-team", lambda folder: team(folder, models))


def oracle(db) -> dict[str, tuple[str, int | None, str]]:
    """What a careful listener knows of each trial by hearing it: its role, what a trap asks or a gold is, and the
    system of the clip rated (what the test itself knows, never the browser)."""
    conn = sqlite3.connect(db)
    try:
        return {t: (role, expected, system) for t, role, expected, system in conn.execute(
            "SELECT t.id, t.role, t.expected, c.system FROM trials t JOIN clips c ON c.id = coalesce(t.second, "
            "t.first)")}
    finally:
        conn.close()


def listen(cwd: Path, *args, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "listen", *args], cwd=cwd,
                          capture_output=True, text=True)
    if check:
        assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def create(cwd: Path, db: str, *args) -> str:
    """A test made with `listen create`; its admin token."""
    told = listen(cwd, "create", db, "v1", "v2", "--name", f"v1 or v2 {HOSTILE}", *args).stdout
    return re.search(r"admin token .*: (\S+)$", told, re.M).group(1)


def invite(cwd: Path, db: str, *names: str, url: str = "") -> dict[str, str]:
    """{name: link} from `listen invite`."""
    told = listen(cwd, "invite", db, *names, *(["--url", url] if url else [])).stdout
    return dict(line.split("\t") for line in told.splitlines())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served(cwd: Path, db: str, *args, port: int | None = None):
    """`listen serve` in its own process, until the block ends (or the test kills it); yields (url, process)."""
    port = port or free_port()
    proc = subprocess.Popen([sys.executable, str(ROOT / "run_pipeline.py"), "listen", "serve", db, "--port",
                             str(port), *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(url, proc)
        yield url, proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def wait_for(url: str, proc: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited {proc.returncode}: {proc.stdout.read()}")
        try:
            httpx.get(f"{url}/static/listen.css", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError(f"the server did not answer on {url} in {seconds} s")


class Listener:
    """A listener's browser, as far as the server can tell: their link opened and the test started (the session
    cookie and the session token of every POST), each clip fetched and played to its end in real time, then the
    answer."""

    def __init__(self, url: str, link: str):
        """`link` as `listen invite` printed it, opened on the server at `url`."""
        self.url = url
        self.client = httpx.Client(base_url=url, timeout=30)
        path = "/l/" + link.rsplit("/l/", 1)[1]
        page = self.client.get(path)
        assert page.status_code == 200, page.text
        self.page = page.text
        started = self.client.post(f"{path}/start", headers={"origin": url})
        assert started.status_code == 200, started.text
        self.token = started.json()["token"]

    def post(self, path: str, body, retry: bool = True, **headers) -> httpx.Response:
        """As the page posts: a 503 (the test's file busy past the server's wait, on a loaded machine) is sent
        again after a backoff, the same body, which the server keeps once; `retry=False` returns the first answer."""
        for attempt in range(20 if retry else 1):
            response = self.client.post(path, json=body, headers={"origin": self.url, "x-session-token": self.token,
                                                                  **headers})
            if response.status_code != 503:
                return response
            time.sleep(min(0.2 * 2 ** attempt, 5.0))
        return response

    def trial(self) -> dict:
        return self.client.get("/api/trial").json()

    def hear(self, trial: dict) -> None:
        """Every clip of the trial fetched, played (side by side: the server asks only that each plays its
        length) and ended."""
        lengths = []
        for clip in trial["clips"]:
            wav = self.client.get(f"/audio/{clip}")
            assert wav.status_code == 200
            lengths.append(seconds(wav.content))
        for clip in trial["clips"]:
            assert self.post("/api/play", {"trial": trial["trial"], "clip": clip, "event": "play"}).status_code == 200
        time.sleep(max(lengths))
        for clip in trial["clips"]:
            assert self.post("/api/play", {"trial": trial["trial"], "clip": clip, "event": "ended"}).status_code == 200

    def vote(self, trial: dict, value: int, submission: str | None = None) -> httpx.Response:
        return self.post("/api/vote", {"trial": trial["trial"], "value": value,
                                       "submission": submission or f"sub-{trial['trial']}"})


def seconds(wav: bytes) -> float:
    import io

    import soundfile

    info = soundfile.info(io.BytesIO(wav))
    return info.frames / info.samplerate


def together(listeners: list, work) -> list:
    """`work(listener)` for every listener at once, as a panel listens: each in its own thread."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(listeners)) as pool:
        return list(pool.map(work, listeners))
