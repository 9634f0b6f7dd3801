"""What a listening test's server refuses and what it keeps: no link, no entry; votes off the scale, unheard or
from a copied file refused; a server killed with -9 keeps every vote it acknowledged; one sample rate and level
hide the systems; damaged, foreign or newer files are named; a lock held elsewhere is a bounded wait. The same two
runs as test_listen.py (tests/listening.py shared_team), on its own copy."""
import contextlib
import http.client
import io
import json
import os
import shutil
import signal
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest

from pipeline.listen import database
from pipeline.listen.app import WAIT_S
from pipeline.listen.kinds import KINDS
from tests.helpers import NO_MEASURES, cli
from tests.listening import HOSTILE, RUN, Listener, create, invite, listen, oracle, seconds, served, shared_team

KINDS_MOS = KINDS.get("mos")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory, worker_id, models_dir):
    return shared_team(tmp_path_factory, worker_id, models_dir)


def test_the_server_refuses_whoever_has_no_link_and_anything_off_the_scale(runs):
    cwd = runs
    admin = create(cwd, "guard.db")
    links = invite(cwd, "guard.db", "ann", "bo", HOSTILE)
    with served(cwd, "guard.db") as (url, _):
        ann, bo = Listener(url, links["ann"]), Listener(url, links["bo"])
        anyone = httpx.Client(base_url=url)
        assert anyone.get("/l/" + "A" * 32).status_code == 404  # a made-up invitation
        assert anyone.get("/api/trial").status_code == 401  # no session
        for path in ("/admin", "/admin/results.json"):
            assert anyone.get(path).status_code == 403
            assert anyone.get(path, params={"token": "wrong" * 8}).status_code == 403
            assert ann.client.get(path).status_code == 403  # a listener's session is not the admin's
            assert anyone.get(path, params={"token": links["ann"].rsplit("/", 1)[1]}).status_code == 403
            assert anyone.get(path, params={"token": ann.token}).status_code == 403
            assert anyone.get(path, params={"token": admin}).status_code == 200
        progress = anyone.get("/admin", params={"token": admin}).text
        assert HOSTILE not in progress and "&lt;script&gt;" in progress
        # listeners' names, runs and systems stay on the server
        assert "en_0000" not in anyone.get("/admin", params={"token": admin}).text

        trial = ann.trial()
        assert set(trial) == {"done", "trial", "position", "total", "title", "clips", "names", "scale", "widget",
                              "plays", "practice"}
        shown = json.dumps({k: v for k, v in trial.items() if k not in ("trial", "clips")})
        for secret in ("v1", "v2", "piper", "espeak", "joe", "results", "out/", "en_0", ".wav"):
            assert secret not in shown
        wav = ann.client.get(f"/audio/{trial['clips'][0]}").content
        assert wav[:4] == b"RIFF" and b"LIST" not in wav[:64]  # no metadata chunk that could name anything
        conn = sqlite3.connect(cwd / "guard.db")
        bo_has = conn.execute("SELECT count(*) FROM assignments a JOIN trials t ON t.id = a.trial JOIN listeners l "
                              "ON l.id = a.listener WHERE l.name = 'bo' AND ? IN (t.first, t.second)",
                              (trial["clips"][0],)).fetchone()[0]
        conn.close()
        assert bo.client.get(f"/audio/{trial['clips'][0]}").status_code == (200 if bo_has else 404)
        assert anyone.get(f"/audio/{trial['clips'][0]}").status_code == 401
        for clip in ("..%2F..%2Fmos.db", "%2Fetc%2Fpasswd", "....//....//etc", "A" * 200):
            assert ann.client.get(f"/audio/{clip}").status_code == 404
        # as sent, not as a client would normalize it (httpx asks for /guard.db): no route takes it
        server = httpx.URL(url)
        with contextlib.closing(http.client.HTTPConnection(server.host, server.port, timeout=10)) as raw:
            raw.request("GET", "/audio/../../guard.db", headers={"cookie": "; ".join(
                f"{k}={v}" for k, v in ann.client.cookies.items())})
            assert raw.getresponse().status == 404

        vote = {"trial": trial["trial"], "value": 4, "submission": "s" * 20}
        assert ann.vote(trial, 4).status_code == 409  # not heard yet
        ann.hear(trial)
        assert ann.post("/api/vote", vote, origin="http://evil.example").status_code == 403
        assert ann.client.post("/api/vote", json=vote, headers={"origin": url}).status_code == 403  # no token
        assert ann.post("/api/vote", vote, **{"x-session-token": bo.token}).status_code == 403
        for value in (9, 0, -1, "4", 4.0, True, None, [4]):
            assert ann.post("/api/vote", {**vote, "value": value}).status_code == 422, value
        assert ann.post("/api/vote", {**vote, "extra": 1}).status_code == 422
        assert ann.post("/api/vote", {**vote, "trial": "../" * 8}).status_code == 404
        assert ann.post("/api/vote", {**vote, "trial": "B" * 16}).status_code == 404
        assert ann.client.post("/api/vote", content=b"{" + b" " * 10_000 + b"}", headers={
            "origin": url, "x-session-token": ann.token, "content-type": "application/json"}).status_code == 413
        assert ann.client.post("/api/vote", content=b"not json", headers={
            "origin": url, "x-session-token": ann.token}).status_code == 422
        assert bo.post("/api/vote", vote).status_code == 404  # not one of bo's trials
        first = ann.post("/api/vote", vote)
        assert first.status_code == 200 and first.json() == {"ok": True, "again": False}
        again = ann.post("/api/vote", vote)
        assert again.status_code == 200 and again.json()["again"]  # a double click: stored once
        assert ann.post("/api/vote", {**vote, "value": 2}).status_code == 409
        headers = anyone.get("/l/" + "A" * 32).headers
        assert "script-src 'self'" in headers["content-security-policy"] and "unsafe-inline" not in \
            headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
        assert "&lt;script&gt;" in ann.page and HOSTILE not in ann.page
    conn = sqlite3.connect(cwd / "guard.db")
    assert conn.execute("SELECT count(*) FROM votes").fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM listeners WHERE invite_sha256 LIKE '%' || ? || '%'",
                        (links["ann"].rsplit("/", 1)[1],)).fetchone()[0] == 0  # the file holds no invitation


def test_bad_inputs_are_named_with_their_fix_and_beyond_loopback_the_server_needs_invitations(runs):
    cwd = runs
    create(cwd, "open.db")
    refused = listen(cwd, "serve", "open.db", "--host", "0.0.0.0", check=False)
    assert refused.returncode == 2 and "needs invitations" in refused.stderr
    invite(cwd, "open.db", "ann")
    refused = listen(cwd, "serve", "open.db", "--host", "0.0.0.0", check=False)
    assert refused.returncode == 2 and "give --url" in refused.stderr
    with served(cwd, "open.db") as (url, _):
        taken = listen(cwd, "serve", "open.db", "--port", url.rsplit(":", 1)[1], check=False)
        assert taken.returncode == 2 and "cannot listen there" in taken.stderr
    told = {
        ("results", "nothing.db"): "nothing.db: no such listening test",
        ("invite", "open.db"): "name the listeners, or give --count N",
        ("create", "open.db", "v1", "v2"): "open.db: exists",
        ("create", "one.db", "v1", "--kind", "cmos"): "compares two versions of each sentence",
        ("create", "smos1.db", "v1", "--condition", "noise:snr=5"):
            "no utterance heard in 'noise:snr=5'; they were heard in clean",
        ("create", "x.db", "results/nowhere"): "not a run",
        ("create", "twice.db", "v1", "results/v1"): "results/v1: the run v1 again; give each run once",
        ("create", "same.db", "v1", "elsewhere/v1"): "v1 and elsewhere/v1 are both runs named 'v1'",  # one system
        ("create", "g.db", "v1", "--gold", "gold.csv"): "--gold gold.csv line 3: 9 is not an answer of mos",
    }
    (cwd / "gold.csv").write_text("audio,expected\nprompts/p.wav,4\nprompts/p.wav,9\n")
    shutil.copytree(cwd / "results" / "v1", cwd / "elsewhere" / "v1")
    for args, expected in told.items():
        proc = listen(cwd, *args, check=False)
        assert proc.returncode == 2 and expected in proc.stderr and "Traceback" not in proc.stderr, (args, proc.stderr)
    assert not (cwd / "g.db").exists()  # nothing half made
    (cwd / "gold.csv").write_text("audio,expected\nprompts/p.wav,4\nout/v2/en_0001.wav,2\n")
    listen(cwd, "create", "g.db", "v1", "--gold", "gold.csv")
    conn = sqlite3.connect(cwd / "g.db")
    assert sorted(e for (e,) in conn.execute("SELECT expected FROM trials WHERE role = 'gold'")) == [2, 4]
    conn.close()


def test_a_server_killed_with_minus_9_between_votes_keeps_every_vote_it_acknowledged_once(runs):
    cwd = runs
    create(cwd, "crash.db")
    links = invite(cwd, "crash.db", "ann")
    known = oracle(cwd / "crash.db")
    acknowledged = []
    from tests.listening import free_port

    port = free_port()
    listener = None
    for round_ in range(3):
        with served(cwd, "crash.db", port=port) as (url, proc):
            listener = listener or Listener(url, links["ann"])
            for _ in range(3):
                trial = listener.trial()
                if trial["done"]:
                    break
                listener.hear(trial)
                response = listener.vote(trial, known[trial["trial"]][1] or 3)
                assert response.status_code == 200
                acknowledged.append((trial["trial"], response.json()))
            os.killpg(proc.pid, signal.SIGKILL)  # no shutdown, no flush: what is acknowledged must be on disk
            proc.wait()
    with served(cwd, "crash.db", port=port) as (url, _):
        # a retry of the last vote whose answer was lost: the same submission, kept once
        last = acknowledged[-1][0]
        retried = listener.post("/api/vote", {"trial": last, "value": known[last][1] or 3,
                                              "submission": f"sub-{last}"})
        assert retried.status_code == 200 and retried.json()["again"]
        assert listener.trial()["position"] == len(acknowledged) + 1  # the next trial, where they stopped
    conn = sqlite3.connect(cwd / "crash.db")
    kept = conn.execute("SELECT trial FROM votes").fetchall()
    assert sorted(t for (t,) in kept) == sorted(t for t, _ in acknowledged)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_vote_needs_the_clip_heard_for_its_length_on_the_server_and_the_acceptance_rules_agree(runs):
    from pipeline.listen import analysis

    cwd = runs
    create(cwd, "ears.db", "--sentences", "3", "--trials", "3")
    links = invite(cwd, "ears.db", "ann")
    with served(cwd, "ears.db") as (url, _):
        ann = Listener(url, links["ann"])
        trial = ann.trial()
        (clip,) = trial["clips"]

        def event(name) -> dict:
            sent = ann.post("/api/play", {"trial": trial["trial"], "clip": clip, "event": name})
            assert sent.status_code == 200
            return sent.json()

        event("play")
        assert event("ended") == {"ok": True, "heard": False}  # no audio fetched: no end at all, the page is told
        assert ann.vote(trial, 3).status_code == 409
        length = seconds(ann.client.get(f"/audio/{clip}").content)
        event("play")
        assert not event("ended")["heard"]  # fetched, but ended a few ms after it started: sooner than it can play
        assert ann.vote(trial, 3).status_code == 409
        event("play")
        time.sleep(length)
        assert event("ended")["heard"]
        assert ann.vote(trial, 3).status_code == 200
        second = ann.trial()
        for _ in range(64):  # play events are bounded per trial: the file cannot be grown without end
            ann.post("/api/play", {"trial": second["trial"], "clip": second["clips"][0], "event": "play"})
        refused = ann.post("/api/play", {"trial": second["trial"], "clip": second["clips"][0], "event": "play"})
        assert refused.status_code == 429
    # a vote written past the server (an older version, a hand edit): the analysis applies the same rule
    conn = sqlite3.connect(cwd / "ears.db")
    conn.execute("INSERT INTO votes (listener, trial, value, submission, at) SELECT listener, ?, 4, 'x', 1e10 FROM "
                 "assignments WHERE trial = ?", (second["trial"], second["trial"]))
    conn.commit()
    conn.close()
    from pipeline.listen import database as tests

    conn = tests.connect(cwd / "ears.db")
    votes = {v.trial: v for v in analysis.votes_of(conn, KINDS_MOS)}
    conn.close()
    assert votes[trial["trial"]].played and not votes[second["trial"]].played


def test_the_good_gold_is_a_natural_recording_never_a_systems_clip_and_no_gold_or_trap_is_a_test_clip(runs):
    cwd = runs
    # the worse version's run named so that it sorts first
    shutil.copytree(cwd / "results" / "v2", cwd / "results" / "a-worse")
    told = listen(cwd, "create", "gold.db", "a-worse", "v1").stdout
    conn = sqlite3.connect(cwd / "gold.db")
    tested = {sha for (sha,) in conn.execute("SELECT audio_sha256 FROM clips WHERE role = 'test'")}
    made = conn.execute("SELECT c.audio_sha256, c.system, t.expected, c.seconds, t.role FROM trials t JOIN clips c "
                        "ON c.id IN (t.first, t.second) WHERE t.role IN ('gold', 'trap')").fetchall()
    assert made and not {sha for sha, *_ in made} & tested
    good = [(system, seconds_) for _, system, expected, seconds_, role in made if role == "gold" and expected == 4]
    prompt = seconds((cwd / "prompts" / "p.wav").read_bytes())
    assert good == [("", pytest.approx(prompt, abs=0.01))]  # the speaker reference, not a-worse's first clip
    # the sentences spread over a listener's trials, the tool's own trials included
    from pipeline.listen import assign, database as tests

    conn.close()
    conn = tests.connect(cwd / "gold.db")
    test = tests.Test.read(conn)
    conn.execute("BEGIN IMMEDIATE")
    tests.invite(conn, "ann")
    conn.execute("COMMIT")
    assign.session(conn, 1, test, 7)
    order = [r[0] for r in conn.execute("SELECT t.sentence_id FROM assignments a JOIN trials t ON t.id = a.trial "
                                        "WHERE a.listener = 1 ORDER BY a.position")]
    conn.close()
    counts = {s_: order.count(s_) for s_ in set(order)}
    assert max(counts.values()) - min(counts.values()) <= 2, counts  # 25 trials over 10 sentences: 2 or 3 each
    assert sum(a == b for a, b in zip(order[3:], order[4:])) == 0  # after the training, never twice in a row
    # 20 test trials (10 sentences × 2 systems), 10 votes each, 20 a session
    assert "so 10 listener sessions" in told


def test_one_sample_rate_and_one_level_hide_the_system_in_every_byte(runs, models_dir):
    from pipeline.io import audio, level

    cwd = runs
    for path in sorted((cwd / "out" / "v2").glob("*.wav")):  # v2 at 16 kHz, against v1's 22.05 kHz
        samples, sr = audio.read(path)
        audio.write_wav(cwd / "out" / "v16" / path.name, audio.resample(samples, sr, 16000) * 0.3, 16000)
    cli(cwd, *RUN, *NO_MEASURES, "--audio-dir", "out/v16", "--run", "v16", models=models_dir, cache=cwd / "cache")
    assert audio.read(cwd / "out" / "v16" / "en_0001.wav")[1] == 16000
    assert audio.read(cwd / "out" / "v1" / "en_0001.wav")[1] == 22050
    listen(cwd, "create", "blind.db", "v16", "v1")
    links = invite(cwd, "blind.db", "ann")
    known = oracle(cwd / "blind.db")
    with served(cwd, "blind.db") as (url, _):
        ann = Listener(url, links["ann"])
        heard = {}
        while not (trial := ann.trial())["done"] and len(heard) < 8:
            for clip in trial["clips"]:
                heard[clip] = (known[trial["trial"]][2], ann.client.get(f"/audio/{clip}"))
            ann.hear(trial)
            assert ann.vote(trial, known[trial["trial"]][1] or 3).status_code == 200
    systems = {system for system, _ in heard.values()}
    assert {"v1", "v16"} <= systems
    import soundfile

    for system, response in heard.values():
        wav = response.content
        assert wav[:4] == b"RIFF" and wav[12:36] == heard[next(iter(heard))][1].content[12:36]  # one fmt chunk
        assert set(response.headers) - {"content-length"} == set(heard[next(iter(heard))][1].headers) - {
            "content-length"}
        samples, sr = soundfile.read(io.BytesIO(wav), dtype="float32")
        assert sr == 22050
        if system:  # the test clips: one active speech level, however loud the run made them
            assert level.active_level(samples, sr) == pytest.approx(-26.0, abs=0.5)


def test_a_copy_of_the_file_lets_no_one_in_and_the_file_is_the_owners_alone(runs):
    cwd = runs
    create(cwd, "copy.db")
    links = invite(cwd, "copy.db", "ann")
    with served(cwd, "copy.db") as (url, _):
        path = "/l/" + links["ann"].rsplit("/l/", 1)[1]
        for _ in range(5):  # a link previewer, reloads: no session is made
            assert httpx.get(url + path).status_code == 200
        conn = sqlite3.connect(cwd / "copy.db")
        assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0
        ann = Listener(url, links["ann"])
        again = Listener(url, links["ann"])  # the link opened again: one session a listener, the old one gone
        assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1
        assert ann.client.get("/api/trial").status_code == 401 and again.client.get("/api/trial").status_code == 200
        for suffix in ("", "-wal", "-shm"):
            assert (cwd / f"copy.db{suffix}").stat().st_mode & 0o777 == 0o600, suffix
        shutil.copy(cwd / "copy.db", cwd / "stolen.db")
        raw = (cwd / "copy.db").read_bytes() + (cwd / "copy.db-wal").read_bytes()
        cookie = again.client.cookies["listen_session"]
        assert cookie.encode() not in raw and again.token.encode() not in raw
        stored = conn.execute("SELECT token_sha256, csrf_sha256 FROM sessions").fetchall()
        conn.close()
        stranger = httpx.Client(base_url=url)
        for cookie_, token in stored:  # what the file holds, tried as a cookie and as a token
            stranger.cookies.set("listen_session", cookie_)
            assert stranger.get("/api/trial").status_code == 401
            assert stranger.post("/api/vote", json={}, headers={"origin": url, "x-session-token": token}
                                 ).status_code == 401


@pytest.mark.parametrize("damage", ["random", "cut", "text", "foreign", "newer"])
def test_a_damaged_foreign_or_newer_file_is_exit_2_naming_it_and_left_as_it_was(runs, damage):
    cwd = runs
    db = cwd / f"damaged-{damage}.db"
    if damage in ("cut", "newer"):
        create(cwd, db.name)
    if damage == "random":
        db.write_bytes(np.random.default_rng(0).bytes(50_000))
    elif damage == "cut":
        db.write_bytes(db.read_bytes()[:6000])
    elif damage == "text":
        db.write_text("audio,expected\nprompts/p.wav,4\n")
    elif damage == "foreign":
        conn = sqlite3.connect(db)
        conn.execute("CREATE TABLE notes (x TEXT)")
        conn.commit()
        conn.close()
    else:
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA user_version = 99")
        conn.close()
    before = db.read_bytes()
    for action in (("results",), ("invite", "ann"), ("admin",), ("serve", "--port", "0")):
        proc = listen(cwd, action[0], str(db), *action[1:], check=False)
        assert proc.returncode == 2 and str(db.name) in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    expected = {"random": "not an SQLite database", "cut": "damaged", "text": "not an SQLite database",
                "foreign": "another program's SQLite database", "newer": "newer version"}[damage]
    assert expected in proc.stderr, proc.stderr
    assert db.read_bytes() == before  # not even its journal mode


def test_a_lock_held_elsewhere_delays_only_what_needs_it_and_then_answers_503(runs):
    cwd = runs
    create(cwd, "lock.db")
    links = invite(cwd, "lock.db", "ann")
    with served(cwd, "lock.db") as (url, _):
        ann = Listener(url, links["ann"])
        trial = ann.trial()
        holder = sqlite3.connect(cwd / "lock.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # an admin's SQLite browser, a second server: holds the write lock
        try:
            with ThreadPoolExecutor(2) as pool:
                start = time.monotonic()
                play = pool.submit(ann.post, "/api/play", {"trial": trial["trial"], "clip": trial["clips"][0],
                                                           "event": "play"}, retry=False)
                time.sleep(0.2)  # lets the play reach the lock first; the order below holds however long it takes
                css = httpx.get(f"{url}/static/listen.css", timeout=5)
                css_before_play = not play.done()
                answered = play.result(timeout=10 * WAIT_S)  # an answer, however slow the machine: no hang
                play_s = time.monotonic() - start
            assert css.status_code == 200 and css_before_play  # not queued behind the lock
            assert answered.status_code == 503 and answered.headers["retry-after"] == "1"
            assert play_s >= WAIT_S * 0.9  # waited its bounded while for the lock, then said so
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert ann.post("/api/play", {"trial": trial["trial"], "clip": trial["clips"][0], "event": "play"}
                        ).status_code == 200


def test_every_spelling_of_all_interfaces_needs_url_and_https_makes_the_cookie_secure(runs):
    from tests.listening import free_port

    cwd = runs
    create(cwd, "wild.db")
    links = invite(cwd, "wild.db", "ann")
    for host in ("0.0.0.0", "", "0", "::", "::0", "0:0:0:0:0:0:0:0"):
        refused = listen(cwd, "serve", "wild.db", "--host", host, check=False)
        assert refused.returncode == 2 and "give --url" in refused.stderr, (host, refused.stderr)
    port = free_port()
    with served(cwd, "wild.db", "--url", f"https://127.0.0.1:{port}", port=port) as (url, _):
        started = httpx.post(url + "/l/" + links["ann"].rsplit("/l/", 1)[1] + "/start",
                             headers={"origin": f"https://127.0.0.1:{port}"})
        assert started.status_code == 200
        cookie = started.headers["set-cookie"].lower()
        assert "secure" in cookie and "httponly" in cookie and "samesite=strict" in cookie


def test_an_oversized_chunked_body_is_413_and_a_smuggled_request_is_never_answered(runs):
    import socket

    cwd = runs
    create(cwd, "wire.db")
    links = invite(cwd, "wire.db", "ann")
    with served(cwd, "wire.db") as (url, proc):
        ann = Listener(url, links["ann"])

        def chunks():
            for _ in range(10):
                yield b"{" + b" " * 1000

        big = ann.client.post("/api/vote", content=chunks(), headers={"origin": url, "x-session-token": ann.token})
        assert big.status_code == 413
        host, port = url.removeprefix("http://").split(":")
        smuggled = (f"POST /api/vote HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: 48\r\n"
                    f"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /static/listen.css HTTP/1.1\r\nHost: x\r\n\r\n")
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(smuggled.encode())
            received = b""
            while chunk := sock.recv(65536):
                received += chunk
        assert received.count(b"HTTP/1.1 ") == 1 and received.startswith(b"HTTP/1.1 400"), received[:300]
    log = proc.stdout.read()
    assert "Traceback" not in log and "ERROR" not in log, log


def test_a_test_made_by_the_first_version_drops_its_clear_sessions_and_carries_on(runs):
    cwd = runs
    create(cwd, "old.db")
    links = invite(cwd, "old.db", "ann")
    conn = sqlite3.connect(cwd / "old.db")  # as the first version kept them: in clear, with no expiry
    conn.executescript("DROP TABLE sessions; CREATE TABLE sessions (token TEXT PRIMARY KEY, csrf TEXT NOT NULL, "
                       "listener INTEGER NOT NULL, created REAL NOT NULL); INSERT INTO sessions VALUES "
                       "('stolen-cookie-0123456789', 'stolen-token-0123456789', 1, 0); PRAGMA user_version = 0;")
    conn.close()
    with served(cwd, "old.db") as (url, _):
        stranger = httpx.Client(base_url=url, cookies={"listen_session": "stolen-cookie-0123456789"})
        assert stranger.get("/api/trial").status_code == 401
        assert Listener(url, links["ann"]).trial()["position"] == 1
    conn = sqlite3.connect(cwd / "old.db")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == database.VERSION
    assert [r[1] for r in conn.execute("PRAGMA table_info(sessions)")][:2] == ["token_sha256", "csrf_sha256"]
