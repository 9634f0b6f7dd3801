"""Listening tests as a team runs them: `listen create` from two real runs, `listen invite`, `listen serve` in its
own process on loopback, listeners speaking real HTTP to it (and one in a real browser), `listen results`; the
calibration carried into a run, the report's section, and compare-runs' gate. What the server refuses, and what it
keeps when it is killed with -9: test_listen_server.py."""
import re
import shutil
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

from pipeline.core import store
from pipeline.scoring.paired import smallest_p
from tests.helpers import ROOT, browser, cli
from tests.listening import (HOSTILE, RUN, Listener, create, invite, listen, oracle, served, shared_team,
                             together)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory, worker_id, models_dir):
    return shared_team(tmp_path_factory, worker_id, models_dir)


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
    """Wait for the page to show trial `text` ("Trial 2 of 9"), a practice trial's label aside."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 30).until(
        lambda d: d.find_element("id", "progress").text.removesuffix(" (practice)") == text)


def answers(driver) -> list:
    return driver.find_elements("css selector", "#answers button")


def listen_and_rate(driver, value: int, by_key: bool = False) -> None:
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
    if by_key:  # a MOS's number keys are its values: 3 is Fair
        driver.find_element("tag name", "body").send_keys(str(value))
    else:
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
            assert driver.find_element("id", "progress").text.endswith("(practice)")  # training comes first
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
            listen_and_rate(driver, 3, by_key=True)
            progress(driver, f"Trial {half + 2} of {total}")
            assert float(driver.find_element("id", "bar").get_attribute("value")) == half + 1
        finally:
            driver.quit()
    conn = sqlite3.connect(cwd / "web.db")
    assert conn.execute("SELECT count(*) FROM votes").fetchone()[0] == half + 1
    assert conn.execute("SELECT value FROM votes ORDER BY at DESC LIMIT 1").fetchone()[0] == 3  # the key pressed
    unheard = conn.execute("SELECT count(*) FROM votes v JOIN trials t ON t.id = v.trial WHERE NOT EXISTS (SELECT 1 "
                           "FROM plays p WHERE p.trial = v.trial AND p.clip = t.first AND p.event = 'ended')")
    assert unheard.fetchone()[0] == 0
