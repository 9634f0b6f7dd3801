"""The listening-test server under load: N simulated listeners at once, on loopback, bounded in count and time.

    python bench/listen_load.py [--listeners 50] [--sentences 20] [--seconds 120] [--kind mos|transcribe]

Makes a MOS test (or, `--kind transcribe`, a transcription test whose listeners type their answers) of two voices
(Piper joe and espeak, `sentences` Shakespeare lines each) with the code `listen create` runs, starts `listen
serve` in its own process, and lets each listener do what the page does: start their session, fetch a trial,
fetch its audio, post its play event, wait the clip's length (the server takes no vote for a clip ended sooner),
post its end, vote; until every session is rated or `seconds` pass. A third load does not wait: each of its votes
is refused (409), and it measures the server under a crowd as fast as it answers. The baseline, in the same run:
one listener alone, and the server's static file under the same load (no database). Reports votes a second, the
p50/p99 latency of the vote POST and of an audio fetch, and votes lost (acknowledged to a listener but not in the
database afterwards: must be 0). Writes bench/out/listen_load.md (listen_load_transcribe.md). The goal on 2 cores:
50 listeners at a p99 vote latency under 50 ms."""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, cpu_name, shakespeare_lines, write_report

sys.path.insert(0, str(ROOT))


def make_test(path: Path, sentences: int, kind: str) -> None:
    from pipeline.listen import create, database
    from pipeline.listen.kinds import KINDS
    from pipeline.tts import base

    lines = shakespeare_lines(sentences, 4, 14)
    by = {}
    for system, voice in (("joe", base.load("piper:joe")), ("espeak", base.load("espeak:en-us"))):
        for i, text in enumerate(lines):
            samples, sr = voice.synthesize(text)
            by.setdefault(system, {})[f"s{i:03d}"] = create.Clip("test", system, system, "", system, f"s{i:03d}",
                                                                 f"{system}_{i}", text, {}, samples, sr)
    options = create.Options(name="load", kind=kind, votes_per_clip=10, trials_per_session=20)
    conn = database.connect(path, create=True)
    try:
        maker = create.Maker(conn=conn, kind=KINDS.get(kind), options=options, rng=random.Random(1),
                             rate=max(c.sr for clips in by.values() for c in clips.values()), by=by, references={},
                             systems=sorted(by), shared=sorted(by["joe"]))
        create.write(maker, "x" * 32, [])
    finally:
        conn.close()


def invite(path: Path, n: int, prefix: str) -> list[str]:
    from pipeline.listen import database

    conn = database.connect(path)
    try:
        conn.execute("BEGIN IMMEDIATE")
        secrets = [database.invite(conn, f"{prefix}-{k}") for k in range(n)]
        conn.execute("COMMIT")
    finally:
        conn.close()
    return secrets


TYPED = "the quality of mercy is not strained it droppeth as gentle rain from heaven".split()  # a typed answer


def seconds_of(wav: bytes) -> float:
    """A 16-bit mono WAV's length, from its header (the clips are written so)."""
    return (len(wav) - 44) / 2 / int.from_bytes(wav[24:28], "little")


async def listener(url: str, secret: str, deadline: float, took: dict, acked: list, hear: bool) -> None:
    import httpx

    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        await client.get(f"/l/{secret}")
        token = (await client.post(f"/l/{secret}/start", headers={"origin": url})).json()["token"]
        headers = {"origin": url, "x-session-token": token}
        while time.monotonic() < deadline:
            trial = (await client.get("/api/trial")).json()
            if trial["done"]:
                return
            for clip in trial["clips"]:
                start = time.perf_counter()
                wav = await client.get(f"/audio/{clip}")
                assert wav.status_code == 200
                took["audio"].append(time.perf_counter() - start)
                for event in ("play", "ended"):
                    await client.post("/api/play", json={"trial": trial["trial"], "clip": clip, "event": event},
                                      headers=headers)
                    if event == "play" and hear:
                        await asyncio.sleep(seconds_of(wav.content))
            start = time.perf_counter()
            answer = " ".join(random.sample(TYPED, 6)) if trial["widget"] == "text" else random.randint(1, 5)
            r = await client.post("/api/vote", json={"trial": trial["trial"], "value": answer,
                                                     "submission": f"sub-{trial['trial']}"}, headers=headers)
            took["vote"].append(time.perf_counter() - start)
            if r.status_code == 200:
                acked.append((secret, trial["trial"]))


async def static_probe(url: str, stop: asyncio.Event, took: list) -> None:
    import httpx

    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        while not stop.is_set():
            start = time.perf_counter()
            await client.get("/static/listen.css")
            took.append(time.perf_counter() - start)
            await asyncio.sleep(0.05)


async def load(url: str, secrets: list[str], seconds: float, hear: bool) -> tuple[dict, list, float, list]:
    took, acked, probe = {"vote": [], "audio": []}, [], []
    stop = asyncio.Event()
    prober = asyncio.create_task(static_probe(url, stop, probe))
    start = time.monotonic()
    await asyncio.gather(*(listener(url, s, start + seconds, took, acked, hear) for s in secrets))
    wall = time.monotonic() - start
    stop.set()
    await prober
    return took, acked, wall, probe


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else float("nan")


def load_average() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--listeners", type=int, default=50)
    p.add_argument("--sentences", type=int, default=20)
    p.add_argument("--seconds", type=float, default=120, help="the most each load runs")
    p.add_argument("--kind", default="mos", choices=("mos", "transcribe"),
                   help="the test: ratings, or typed answers (each clip played once)")
    args = p.parse_args()
    if not 1 <= args.listeners <= 200:
        raise SystemExit("--listeners: 1 to 200 (a load test stays bounded)")
    work = Path(tempfile.mkdtemp(prefix="listen_load-"))
    db = work / "load.db"
    make_test(db, args.sentences, args.kind)
    loads = [("1 listener, hearing each clip (baseline)", invite(db, 1, "alone"), True),
             (f"{args.listeners} listeners, hearing each clip", invite(db, args.listeners, "heard"), True),
             (f"{args.listeners} listeners who do not listen (every vote refused)", invite(db, args.listeners,
                                                                                          "stress"), False)]
    from tests.listening import free_port, wait_for

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    before = load_average()
    server = subprocess.Popen([sys.executable, str(ROOT / "run_pipeline.py"), "listen", "serve", str(db), "--port",
                               str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    measured = []
    try:
        wait_for(url, server)
        for name, secrets, hear in loads:
            measured.append((name, *asyncio.run(load(url, secrets, args.seconds, hear))))
    finally:
        server.terminate()
        server.wait(timeout=30)
    conn = sqlite3.connect(db)
    stored = {t for (t,) in conn.execute("SELECT l.name || ' ' || v.trial FROM votes v JOIN listeners l ON l.id = "
                                         "v.listener")}
    conn.close()
    names = {secret: f"{prefix}-{k}" for (_, secrets, _), prefix in zip(loads, ("alone", "heard", "stress"))
             for k, secret in enumerate(secrets)}
    acked = [(names[secret], trial) for _, _, a, _, _ in measured for secret, trial in a]
    lost = sum(f"{name} {trial}" not in stored for name, trial in acked)
    lines = [f"# listen_load: {cpu_name()}; load average {before} before the run", "",
             f"A {args.kind} test of 2 voices × {args.sentences} sentences; a session is 20 test trials with the gold "
             "and trapping ones among them, after the training trials; a listener who hears waits each clip's length "
             "between its play and its end, as the server asks. The listeners run in this process (httpx), the "
             "server in its own (uvicorn, one "
             f"process; SQLite WAL, synchronous=FULL), on the same cores; each load is bounded at {args.seconds:.0f} "
             "s.", "",
             "| load | votes | votes/s | vote p50 ms | vote p99 ms | audio p50 ms | audio p99 ms | static p99 ms |",
             "|---|---|---|---|---|---|---|---|"]
    for name, took, a, wall, probe in measured:
        lines.append(f"| {name} | {len(a)} | {len(a) / wall:.0f} | {pct(took['vote'], .5):.1f} | "
                     f"{pct(took['vote'], .99):.1f} | {pct(took['audio'], .5):.1f} | {pct(took['audio'], .99):.1f} | "
                     f"{pct(probe, .99):.1f} |")
    goal = pct(measured[1][1]["vote"], .99)
    lines += ["", "static: the server's stylesheet, fetched every 50 ms during the load (no database)",
              f"p99 vote latency of the listening crowd against one listener alone: "
              f"{goal / pct(measured[0][1]['vote'], .99):.1f}×",
              f"votes lost: {lost} of {len(acked)} acknowledged",
              f"goal ({args.listeners} listeners, p99 vote < 50 ms): {'met' if goal < 50 else 'not met'} "
              f"({goal:.1f} ms); load average after {load_average()}"]
    rows = [{"load": name, "votes": len(a), "wall_s": wall, "vote_p50_ms": pct(t["vote"], .5),
             "vote_p99_ms": pct(t["vote"], .99), "audio_p50_ms": pct(t["audio"], .5),
             "audio_p99_ms": pct(t["audio"], .99)} for name, t, a, wall, _ in measured]
    write_report("listen_load" if args.kind == "mos" else f"listen_load_{args.kind}", lines,
                 {"rows": rows, "lost": lost})
    if lost:
        raise SystemExit(f"{lost} acknowledged votes lost")


if __name__ == "__main__":
    os.environ.setdefault("TQDM_DISABLE", "1")
    main()
