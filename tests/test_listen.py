"""Listening tests as a team runs them: `listen create` from two real runs, `listen invite`, `listen serve` in its
own process on loopback, listeners speaking real HTTP to it, `listen results`; the calibration carried into a
run, the report's section, and compare-runs' gate. And what the server refuses, and what it keeps when it is
killed with -9."""
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from pipeline.core import store
from tests.helpers import ROOT, cli
from tests.listening import HOSTILE, RUN, Listener, create, invite, listen, served, team

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
    rng = np.random.default_rng(0)
    quality = {"v1": 4, "v2": 2}

    def careful(role, expected, system):
        if role in ("trap", "gold"):
            return expected
        return int(np.clip(quality.get(system, 3) + rng.integers(-1, 2) * (rng.random() < 0.4), 1, 5))

    with served(cwd, "mos.db") as (url, _):
        for name, link in links.items():
            rate_all(Listener(url, link), known, careful if name != "rand" else
                     lambda *_: int(rng.integers(1, 6)))
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
    assert "left out: rand" in left_out and ("trapping trial" in left_out or "gold trial" in left_out)
    assert [r["listener"] for r in store.read_csv(out / "excluded.csv")] == ["rand"]
    assert "dnsmos_ovrl ranks the systems as the listeners did: v1 > v2" in told
    fits = {f["measure"]: f for f in store.read_json(out / "calibration.json")["calibrations"]}
    assert {"dnsmos_ovrl", "dnsmos_p808"} <= set(fits) and "speaker_sim" not in fits  # similarity is SMOS's
    assert "dnsmos_ovrl on this panel's scale" in told
    page = (out / "results.html").read_text()
    assert HOSTILE not in page and "&lt;script&gt;" in page and "<img" in page
    agreement = store.read_csv(out / "agreement.csv")
    assert {r["measure"] for r in agreement} >= {"dnsmos_ovrl"} and {r["level"] for r in agreement} == {"utterance"}

    # the calibration in a run of the same audio, and the listeners in its report
    cli(cwd, *RUN, "--audio-dir", "out/v1", "--run", "v1-calibrated", "--set",
        f"assess.calibration={out / 'calibration.json'}", "--listening", "mos.db", models=models_dir,
        cache=cwd / "cache")
    run = cwd / "results" / "v1-calibrated"
    rows = store.read_csv(run / "utterances.csv")
    fit = fits["dnsmos_ovrl"]
    for r in rows:
        value, calibrated = float(r["dnsmos_ovrl"]), r["calibrated_dnsmos_ovrl"]
        inside = fit["low"] <= value <= fit["high"]
        assert (calibrated != "") == inside
        if inside:
            assert float(calibrated) == pytest.approx(fit["intercept"] + fit["slope"] * value, abs=1e-3)
    meaning = store.read_json(run / "measures.json")["calibrated"]["columns"]["calibrated_dnsmos_ovrl"]
    assert "on the MOS scale of listening test" in meaning and f"v1 or v2 {HOSTILE}" in meaning
    report = (run / "report.html").read_text()
    assert "Listeners: v1 or v2 &lt;script&gt;" in report and "Left out" in report and HOSTILE not in report

    # the listeners' MOS in the release gate: v2 is worse by their ears
    gate = subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "compare-runs", "v1", "v2", "--listening",
                           "mos.db", "--fail-if-worse", "--margin", "listeners_mos=0.5"], cwd=cwd,
                          capture_output=True, text=True)
    human = [r for r in store.read_csv(cwd / "results" / "compare-v1-vs-v2" / "run_comparison.csv")
             if r["metric"] == "listeners_mos"]
    assert len(human) == 1 and float(human[0]["delta"]) < -1 and int(human[0]["sentences"]) == 10, gate.stdout
    assert "listeners_mos: the accepted listeners of test" in gate.stdout
    assert gate.returncode == 1 and any("listeners_mos: worse" in line for line in gate.stderr.splitlines()
                                        if line.startswith("FAIL")), gate.stderr


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
        assert bo.client.get(f"/audio/{trial['clips'][0]}").status_code in (200, 404)  # only if bo has it too
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

    with served(cwd, db) as (url, _):
        for link in links.values():
            listener = Listener(url, link)
            while not (trial := listener.trial())["done"]:
                listener.hear(trial)
                role, expected, system = known[trial["trial"]]
                assert listener.vote(trial, prefers_v1(role, expected, system, trial["trial"])).status_code == 200
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
            assert pair["mean"] == -2 and pair["ci95_high"] < 0  # the sign put right, whatever the order heard
        else:
            assert pair["prefer_a"] == pair["votes"] and pair["mean"] == 0 and pair["p"] < 0.05


CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")


def browser(profile: Path):
    """Debian's Chromium, headless, driven by Debian's chromium-driver; its own profile, as a listener's own."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--mute-audio",
                 "--autoplay-policy=no-user-gesture-required", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def progress(driver, text: str) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 30).until(lambda d: d.find_element("id", "progress").text == text)


def answers(driver) -> list:
    return driver.find_elements("css selector", "#answers button")


def listen_and_rate(driver, value: int) -> None:
    """Play every recording of the trial to its end (4× fast: the page counts an end as an end), then answer."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.execute_script("document.querySelectorAll('audio').forEach(a => { a.playbackRate = 4; a.play(); })")
    WebDriverWait(driver, 30).until(lambda d: answers(d) and all(b.is_enabled() for b in answers(d)))
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
            driver.execute_script("const a = document.querySelector('audio'); a.currentTime = a.duration - 0.05; "
                                  "a.play();")
            time.sleep(0.7)  # a clip that ended now would have enabled the answers within a few ms
            assert driver.execute_script("return document.querySelector('audio').currentTime") < 1.0
            assert not any(b.is_enabled() for b in answers(driver))
            status = driver.execute_async_script(
                "const done = arguments[arguments.length - 1];"
                "fetch('/api/trial').then(r => r.json()).then(t => fetch('/api/vote', {method: 'POST', headers: "
                "{'content-type': 'application/json', 'x-session-token': document.querySelector("
                "'meta[name=\"session-token\"]').content}, body: JSON.stringify({trial: t.trial, value: 4, "
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
