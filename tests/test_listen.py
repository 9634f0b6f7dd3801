"""Listening tests as a team runs them: `listen create` from two real runs, `listen invite`, `listen serve` in its
own process on loopback, listeners speaking real HTTP to it, `listen results`; the calibration carried into a
run, the report's section, and compare-runs' gate. And what the server refuses, and what it keeps when it is
killed with -9."""
import io
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest

from pipeline.core import store
from pipeline.scoring.paired import smallest_p
from tests.helpers import ROOT, browser, cli
from pipeline.listen.kinds import KINDS
from tests.listening import HOSTILE, RUN, Listener, create, invite, listen, seconds, served, team, together

KINDS_MOS = KINDS.get("mos")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory, models_dir):
    return team(tmp_path_factory.mktemp("listen"), models_dir)


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


def rate_all(listener: Listener, known: dict, choose) -> int:
    """Every trial of the listener's session, each clip heard to its end first; the votes given."""
    given = 0
    while not (trial := listener.trial())["done"]:
        listener.hear(trial)
        role, expected, system = known[trial["trial"]]
        response = listener.vote(trial, choose(role, expected, system))
        assert response.status_code == 200, response.text
        given += 1
    return given


def test_a_team_reads_each_systems_mos_who_was_left_out_and_dnsmos_on_their_scale(runs, models_dir):
    cwd = runs
    create(cwd, "mos.db", "--votes-per-clip", "3", "--trials", "8")
    links = invite(cwd, "mos.db", "ann", "bo", "cy", "di", "ed", "rand")
    assert all(len(link.rsplit("/", 1)[1]) >= 22 for link in links.values())  # 16 random bytes at the least
    known = oracle(cwd / "mos.db")
    quality = {"v1": 4, "v2": 2}

    def careful():
        """A listener whose votes follow the systems' quality, a point either way now and then (each listener's
        own spread, whatever the order their threads run in: never one that hardly varies)."""
        spread = iter(np.tile([0, -1, 0, 1], 100))

        def choose(role, expected, system):
            return expected if role in ("trap", "gold") else int(np.clip(quality.get(system, 3) + next(spread), 1, 5))
        return choose

    def random_voter():
        """Votes at random without listening, and so misses what a trap asks (drawn from the other four values:
        a voter drawing from all five passes both traps and both golds about once in a hundred sessions)."""
        rng = np.random.default_rng(0)

        def choose(role, expected, system):
            return int(rng.choice([v for v in range(1, 6) if v != expected])) if role == "trap" else \
                int(rng.integers(1, 6))
        return choose

    with served(cwd, "mos.db") as (url, _):
        together(list(links.items()), lambda item: rate_all(Listener(url, item[1]), known,
                                                            random_voter() if item[0] == "rand" else careful()))
    conn = sqlite3.connect(cwd / "mos.db")
    counts = [n for (n,) in conn.execute("SELECT count(a.trial) FROM trials t LEFT JOIN assignments a ON "
                                         "a.trial = t.id WHERE t.role = 'test' GROUP BY t.id")]
    assert max(counts) - min(counts) <= 1  # balanced: every clip reaches the votes asked for together
    conn.close()
    told = listen(cwd, "results", "mos.db").stdout
    out = cwd / "mos-results"
    systems = {r["system"]: r for r in store.read_csv(out / "systems.csv")}
    assert set(systems) == {"v1", "v2"}
    assert float(systems["v2"]["ci95_high"]) < float(systems["v1"]["ci95_low"])
    assert float(systems["v1"]["ci95_low"]) <= float(systems["v1"]["mean"]) <= float(systems["v1"]["ci95_high"])
    (left_out,) = [line for line in told.splitlines() if "left out:" in line]
    conn = sqlite3.connect(cwd / "mos.db")  # what rand broke, read from the votes themselves
    broke = {role for role, value, expected in conn.execute(
        "SELECT t.role, v.value, t.expected FROM votes v JOIN trials t ON t.id = v.trial JOIN listeners l ON "
        "l.id = v.listener WHERE l.name = 'rand' AND t.role IN ('trap', 'gold')")
        if (role == "trap" and value != expected) or (role == "gold" and abs(value - expected) > 1)}
    conn.close()
    assert "left out: rand" in left_out and broke
    assert ("trapping trial" in left_out) == ("trap" in broke) and ("gold trial" in left_out) == ("gold" in broke)
    assert re.search(r"trial \d+ answered \d \(\w+\), (asked for|expected) \d \(\w+\)", left_out), left_out
    assert [r["listener"] for r in store.read_csv(out / "excluded.csv")] == ["rand"]
    assert "dnsmos_ovrl ranks the systems as the listeners did: v1 > v2" in told
    (diff,) = store.read_csv(out / "differences.csv")
    assert (diff["a"], diff["b"]) == ("v1", "v2") and float(diff["ci95_high"]) < 0 and float(diff["p"]) < 0.01
    assert "v2 against v1: Δ MOS" in told
    fits = {f["measure"]: f for f in store.read_json(out / "calibration.json")["calibrations"]}
    assert {"dnsmos_ovrl", "dnsmos_p808"} <= set(fits) and "speaker_sim" not in fits  # similarity is SMOS's
    assert "dnsmos_ovrl on this panel's scale" in told
    page = (out / "results.html").read_text()
    assert HOSTILE not in page and "&lt;script&gt;" in page and "<img" in page
    agreement = store.read_csv(out / "agreement.csv")
    assert {r["measure"] for r in agreement} >= {"dnsmos_ovrl"} and {r["level"] for r in agreement} == {"utterance"}

    # the listeners' MOS in the release gate: v2 is worse by their ears
    def gate() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "compare-runs", "v1", "v2",
                               "--listening", "mos.db", "--fail-if-worse", "--margin", "listeners_mos=0.5"], cwd=cwd,
                              capture_output=True, text=True)

    plain = gate()
    compared = cwd / "results" / "compare-v1-vs-v2" / "run_comparison.csv"
    plain_rows = store.read_csv(compared)
    human = [r for r in plain_rows if r["metric"] == "listeners_mos"]
    assert len(human) == 1 and float(human[0]["delta"]) < -1 and int(human[0]["sentences"]) == 10, plain.stdout
    assert "listeners_mos: the accepted listeners of test" in plain.stdout
    # ten sentences, eight metrics: the exact test's floor (2/1024) times eight still fails a gate
    assert plain.returncode == 1 and any("listeners_mos: worse" in line for line in plain.stderr.splitlines()
                                         if line.startswith("FAIL")), plain.stderr
    assert "cannot fail" not in plain.stdout + plain.stderr

    # the calibration in runs of the same audio (the listeners' clips are still theirs), and the report
    for version in ("v1", "v2"):
        cli(cwd, *RUN, "--audio-dir", f"out/{version}", "--run", version, "--set",
            f"assess.calibration={out / 'calibration.json'}", "--listening", "mos.db", models=models_dir,
            cache=cwd / "cache")
    run = cwd / "results" / "v1"
    rows = store.read_csv(run / "utterances.csv")
    fit = fits["dnsmos_ovrl"]
    for r in rows:
        value, calibrated = float(r["dnsmos_ovrl"]), r["calibrated_dnsmos_ovrl"]
        inside = fit["low"] <= value <= fit["high"]
        assert (calibrated != "") == inside
        if inside:
            line = fit["intercept"] + fit["slope"] * value
            assert float(calibrated) == pytest.approx(min(5.0, max(1.0, line)), abs=1e-3)
    heard = {float(c["dnsmos_ovrl"]) for c in store.read_csv(out / "clips.csv")}
    assert all(r["calibrated_dnsmos_ovrl"] != "" for r in rows if float(r["dnsmos_ovrl"]) in heard)  # ends too
    meaning = store.read_json(run / "measures.json")["calibrated"]["columns"]["calibrated_dnsmos_ovrl"]
    assert "on the MOS scale of listening test" in meaning and f"v1 or v2 {HOSTILE}" in meaning
    report = (run / "report.html").read_text()
    assert "Listeners: v1 or v2 &lt;script&gt;" in report and "Left out" in report and HOSTILE not in report

    # the same two versions with calibrated columns: the same verdict, the lines of measures counted once
    calibrated = gate()
    assert calibrated.returncode == plain.returncode == 1, calibrated.stdout + calibrated.stderr
    lines = store.read_csv(compared)
    derived = [r for r in lines if r["derived_from"]]
    assert {r["metric"] for r in derived} == {f"calibrated_{f}" for f in fits}
    assert all(r["worse"] == "False" and r["p_holm"] == next(
        x["p_holm"] for x in lines if x["metric"] == r["derived_from"]) for r in derived)
    same = {r["metric"]: (r["p_holm"], r["worse"]) for r in plain_rows}
    assert {r["metric"]: (r["p_holm"], r["worse"]) for r in lines if not r["derived_from"]} == same
    assert "calibrated_dnsmos_ovrl is a function of dnsmos_ovrl" in calibrated.stdout

    # ab.html in a real browser: each sentence's listeners' mean for both runs
    if CHROMIUM and CHROMEDRIVER:
        driver = browser(cwd / "profile-ab")
        try:
            driver.get((cwd / "results" / "compare-v1-vs-v2" / "ab.html").as_uri())
            cards = driver.find_elements("css selector", "#ab tbody tr")
            assert len(cards) == 10
            for card in cards:
                shown = re.findall(r"listeners_mos (\d(?:\.\d+)?)", card.text)
                assert len(shown) == 2, card.text  # A's and B's
        finally:
            driver.quit()


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
        assert set(trial) == {"done", "trial", "position", "total", "title", "clips", "names", "scale"}
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
        assert httpx.get(f"{url}/audio/../../guard.db", cookies=ann.client.cookies).status_code in (401, 404)

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
        ("create", "smos1.db", "v1", "--condition", "noise:snr=5"): "no utterance heard in condition 'noise:snr=5'",
        ("create", "x.db", "results/nowhere"): "not a run",
        ("create", "g.db", "v1", "--gold", "gold.csv"): "--gold gold.csv line 3: 9 is not an answer of mos",
    }
    (cwd / "gold.csv").write_text("audio,expected\nprompts/p.wav,4\nprompts/p.wav,9\n")
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


@pytest.mark.parametrize("kind", ["cmos", "ab-np", "smos"])
def test_every_kind_is_made_served_and_read_with_its_own_analysis(runs, kind):
    cwd = runs
    db = f"{kind}.db"
    create(cwd, db, "--kind", kind, "--sentences", "4")
    links = invite(cwd, db, "ann", "bo", "cy")
    known = oracle(cwd / db)
    conn = sqlite3.connect(cwd / db)
    order = {t: (a, b, bool(s)) for t, a, b, s in conn.execute(
        "SELECT t.id, (SELECT system FROM clips WHERE id = t.first), (SELECT system FROM clips WHERE id = t.second),"
        " t.swapped FROM trials t")}
    conn.close()

    def prefers_v1(role, expected, system, trial):
        if role in ("trap", "gold"):
            if role == "gold" and order[trial][2]:  # a pair's gold heard in the other order
                return {"cmos": -expected, "ab-np": {1: 2, 2: 1}.get(expected, expected)}.get(kind, expected)
            return expected
        if kind == "smos":
            return 4 if system == "v1" else 2
        first, second, swapped = order[trial]
        heard_second = first if swapped else second  # what the listener hears second
        better_second = heard_second == "v1"
        return (2 if better_second else -2) if kind == "cmos" else (2 if better_second else 1)

    def session(link):
        listener = Listener(url, link)
        while not (trial := listener.trial())["done"]:
            listener.hear(trial)
            role, expected, system = known[trial["trial"]]
            assert listener.vote(trial, prefers_v1(role, expected, system, trial["trial"])).status_code == 200

    with served(cwd, db) as (url, _):
        together(list(links.values()), session)
    listen(cwd, "results", db, "--out", f"{kind}-out")
    found = store.read_json(cwd / f"{kind}-out" / "results.json")
    assert found["accepted"] == 3, found["excluded"]
    if kind == "smos":
        scores = {s["system"]: s["mean"] for s in found["systems"]}
        assert scores["v1"] > scores["v2"]
        assert {a["measure"] for a in found["agreements"]} == {"speaker_sim"}
    else:
        (pair,) = found["pairs"]
        assert (pair["a"], pair["b"]) == ("v1", "v2")
        if kind == "cmos":
            assert pair["mean"] == -2  # the sign put right, whatever the order heard
            # three listeners all saying −2 on four sentences: an exact binomial interval over three units, wide
            assert pair["ci95_low"] < -2 < pair["ci95_high"]
        else:
            assert pair["prefer_a"] == pair["votes"] and pair["preference"] == -1
            assert pair["mean"] == 0 and pair["share_b"] == 0  # the share preferring B, as before #54
        assert pair["p"] == pytest.approx(smallest_p(4), rel=1e-3)  # 4 sentences, one way: the exact floor
        assert pair["ci95_high"] > pair["ci95_low"]  # a unanimous panel: an interval, not a point
        # the pair test in the gate: the listeners' preference for v2 over v1, paired by sentence
        gate = subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "compare-runs", "v1", "v2",
                               "--listening", db, "--out", f"{kind}-gate"], cwd=cwd, capture_output=True, text=True)
        assert gate.returncode == 0, gate.stderr
        metric = {"cmos": "listeners_cmos", "ab-np": "listeners_ab"}[kind]
        (row,) = [r for r in store.read_csv(cwd / f"{kind}-gate" / "run_comparison.csv") if r["metric"] == metric]
        assert float(row["delta"]) == pair["preference"] and int(row["sentences"]) == 4
        assert float(row["p"]) == pytest.approx(smallest_p(4), rel=1e-3)
        assert "cannot reach p < 0.05" in gate.stdout  # four sentences: no exact test can, and it is said


CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")


def progress(driver, text: str) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 30).until(lambda d: d.find_element("id", "progress").text == text)


def answers(driver) -> list:
    return driver.find_elements("css selector", "#answers button")


def listen_and_rate(driver, value: int) -> None:
    """Play every recording of the trial to its end, as long as it lasts (the server counts no sooner end), then
    answer. A listener the page asks to play a recording to its end (the server saw its play event late, on a
    machine this busy) plays it again, as a person would."""
    from selenium.webdriver.support.ui import WebDriverWait

    def ready(d):
        return answers(d) and all(b.is_enabled() for b in answers(d))

    def replayed(d):  # every recording played to its end again, and the page still asks for it
        return d.execute_script("return window.ends >= document.querySelectorAll('audio').length") and \
            "to its end" in d.find_element("id", "status").text

    for _ in range(3):
        driver.execute_script("window.ends = 0; document.querySelectorAll('audio').forEach(a => {"
                              "a.addEventListener('ended', () => { window.ends += 1; }, {once: true}); a.play(); })")
        WebDriverWait(driver, 30).until(lambda d: ready(d) or replayed(d))
        if ready(driver):
            break
    next(b for b in answers(driver) if b.get_attribute("data-value") == str(value)).click()


@pytest.mark.skipif(CHROMIUM is None or CHROMEDRIVER is None,
                    reason="needs Debian chromium and chromium-driver (scripts/setup --test)")
def test_a_listener_in_a_real_browser_rates_half_a_session_closes_it_and_carries_on(runs, tmp_path):
    from selenium.webdriver.support.ui import WebDriverWait

    cwd = runs
    create(cwd, "web.db", "--sentences", "3", "--trials", "4")
    links = invite(cwd, "web.db", "ann")
    total = sum(1 for role, _, _ in oracle(cwd / "web.db").values() if role == "training") + 4 + 2 + 2
    with served(cwd, "web.db") as (url, _):
        link = url + "/l/" + links["ann"].rsplit("/l/", 1)[1]
        driver = browser(tmp_path / "first")
        try:
            driver.get(link)
            progress(driver, f"Trial 1 of {total}")
            assert driver.title == f"v1 or v2 {HOSTILE}"  # the test's name, as text: no script ran
            assert driver.find_element("tag name", "h1").text == f"v1 or v2 {HOSTILE}"
            buttons = answers(driver)
            assert [b.text for b in buttons] == ["5 Excellent", "4 Good", "3 Fair", "2 Poor", "1 Bad"]
            assert not any(b.is_enabled() for b in buttons)
            # no skipping to the end, and the server refuses a vote for a clip not heard to its end
            WebDriverWait(driver, 30).until(lambda d: d.execute_script(
                "return document.querySelector('audio').readyState >= 1"))
            # the page puts a seek ahead back where the listener had reached: wait for that, then look
            back = driver.execute_async_script(
                "const done = arguments[arguments.length - 1], a = document.querySelector('audio');"
                "a.addEventListener('seeked', () => { if (a.currentTime < 1.0) done(a.currentTime); });"
                "a.currentTime = a.duration - 0.05; a.play();")
            assert back < 1.0
            assert not any(b.is_enabled() for b in answers(driver))
            status = driver.execute_async_script(
                "const done = arguments[arguments.length - 1];"
                "fetch('/api/trial').then(r => r.json()).then(t => fetch('/api/vote', {method: 'POST', headers: "
                "{'content-type': 'application/json', 'x-session-token': sessionToken}, body: JSON.stringify({trial: t.trial, value: 4, "
                "submission: 'x'.repeat(20)})})).then(r => done(r.status))")
            assert status == 409
            half = total // 2
            for n in range(half):
                listen_and_rate(driver, 4)
                progress(driver, f"Trial {n + 2} of {total}")
        finally:
            driver.quit()  # the listener closes the browser
        driver = browser(tmp_path / "again")
        try:
            driver.get(link)
            progress(driver, f"Trial {half + 1} of {total}")  # where they stopped
            listen_and_rate(driver, 3)
            progress(driver, f"Trial {half + 2} of {total}")
        finally:
            driver.quit()
    conn = sqlite3.connect(cwd / "web.db")
    assert conn.execute("SELECT count(*) FROM votes").fetchone()[0] == half + 1
    unheard = conn.execute("SELECT count(*) FROM votes v JOIN trials t ON t.id = v.trial WHERE NOT EXISTS (SELECT 1 "
                           "FROM plays p WHERE p.trial = v.trial AND p.clip = t.first AND p.event = 'ended')")
    assert unheard.fetchone()[0] == 0


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
    cli(cwd, *RUN, "--audio-dir", "out/v16", "--run", "v16", models=models_dir, cache=cwd / "cache")
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
        holder.execute("BEGIN IMMEDIATE")  # an admin's SQLite browser, a second server: the write lock for 3 s
        try:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(2) as pool:
                start = time.monotonic()
                play = pool.submit(ann.post, "/api/play", {"trial": trial["trial"], "clip": trial["clips"][0],
                                                           "event": "play"}, retry=False)
                time.sleep(0.2)
                css = httpx.get(f"{url}/static/listen.css", timeout=5)
                static_s = time.monotonic() - start
                answered = play.result(timeout=10)
                play_s = time.monotonic() - start
            assert css.status_code == 200 and static_s < 1.0  # not queued behind the lock
            assert answered.status_code == 503 and answered.headers["retry-after"] == "1"
            assert 1.5 < play_s < 3.0  # waited its bounded while, then said so: no hang
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
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert [r[1] for r in conn.execute("PRAGMA table_info(sessions)")][:2] == ["token_sha256", "csrf_sha256"]
