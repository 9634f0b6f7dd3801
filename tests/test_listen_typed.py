"""A transcription test as a team runs it: listeners type what they hear (over HTTP as the page does, and one in a
real browser), each recording played once, and `listen results` sets their WER beside the runs' engine on the very
same clips. The scorer and the analysis alone: test_typed.py."""
import html
import re
import shutil
import sqlite3
import subprocess
import sys

import httpx
import numpy as np
import pytest

from pipeline.core import store
from pipeline.gate import sealed
from pipeline.listen import analysis, database, typed
from tests.helpers import NO_MEASURES, ROOT, browser, cli
from tests.listening import HOSTILE, RUN, Listener, create, invite, listen, oracle, served, shared_team, together
from tests.test_listen import CHROMEDRIVER, CHROMIUM, progress

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory, worker_id, models_dir):
    return shared_team(tmp_path_factory, worker_id, models_dir)


def sentences(db) -> dict[str, str]:
    """Each trial's sentence, as the test knows it (the browser never does)."""
    conn = sqlite3.connect(db)
    try:
        return dict(conn.execute("SELECT t.id, c.reference_text FROM trials t JOIN clips c ON c.id = t.first"))
    finally:
        conn.close()


def test_listeners_type_what_they_hear_and_read_their_wer_beside_the_engines(runs, models_dir, tmp_path):
    cwd = runs
    admin = create(cwd, "typed.db", "--kind", "transcribe", "--sentences", "3")
    links = invite(cwd, "typed.db", "ann", "bo", "cy")
    known, said = oracle(cwd / "typed.db"), sentences(cwd / "typed.db")
    conn = sqlite3.connect(cwd / "typed.db")
    roles = conn.execute("SELECT role, sentence_id FROM trials").fetchall()
    conn.close()
    tested = {s for role, s in roles if role == "test"}
    assert len(tested) == 3 and not tested & {s for role, s in roles if role != "test"}  # no sentence heard twice

    def answer(name, trial) -> str:
        role, expected, system = known[trial]
        if role == "trap":
            return "-" if name == "cy" else f"I heard the word {expected.upper()}!"  # cy misses every trap
        if role == "gold":
            return expected
        if role == "training":
            return "practice"
        if role == "test" and system == "v2":
            return " ".join(said[trial].split()[1:])  # v2's first word missed: one error a sentence
        return f"{said[trial]} {HOSTILE}"  # v1's answers: a script, as text, and words inserted

    with served(cwd, "typed.db") as (url, _):
        first = Listener(url, links["ann"])
        trial = first.trial()
        second = Listener(url, links["bo"])
        second.trial()  # ann and bo draw their trials first: between them, each sentence of each system once
        assert (trial["widget"], trial["plays"], trial["scale"], trial["names"]) == ("text", 1, [], ["Recording"])
        first.hear(trial)
        again = first.post("/api/play", {"trial": trial["trial"], "clip": trial["clips"][0], "event": "play"},
                           retry=False)
        assert again.status_code == 409 and "1 time(s)" in again.json()["error"]  # played once: no second time
        ended = first.post("/api/play", {"trial": trial["trial"], "clip": trial["clips"][0], "event": "ended"},
                           retry=False)
        assert ended.status_code == 409  # and no end without a play: a second end cannot stand for a second hearing
        for n, (bad, why) in enumerate(((5, "as text"), ("  ", "empty answer"), ("a" * 501, "at most 500"),
                                        ("a\x07b", "control characters (U+0007)"))):
            refused = first.vote(trial, bad, submission=f"refused-{n}-{trial['trial']}")
            assert refused.status_code == 422 and why in refused.json()["error"], refused.text

        def session(name):
            listener = {"ann": first, "bo": second}.get(name) or Listener(url, links[name])
            while not (t := listener.trial())["done"]:
                if listener is not first or t["trial"] != trial["trial"]:  # ann heard her first trial above
                    listener.hear(t)
                response = listener.vote(t, answer(name, t["trial"]))
                assert response.status_code == 200, response.text

        together(["ann", "bo", "cy"], session)
        done = first.trial()
        assert done["done"] and re.fullmatch(r"[0-9A-F]{10}", done["code"])
        progress_page = httpx.get(f"{url}/admin", params={"token": admin}).text
        assert "&lt;script&gt;alert" in progress_page and HOSTILE not in progress_page
        assert done["code"] in progress_page  # the admin sees who finished, by the code each was shown
    listen(cwd, "results", "typed.db", "--out", "typed-out")
    out = cwd / "typed-out"
    found = store.read_json(out / "results.json")
    assert found["accepted"] == 2
    (left,) = found["excluded"]
    assert left["listener"] == "cy" and "trapping trial(s) answered otherwise than asked" in left["reasons"][0]
    rows = {(r["system"], r["by"]): r for r in store.read_csv(out / "heard.csv")}
    v1, v2 = rows["v1", "listeners"], rows["v2", "listeners"]
    # two listeners kept, each typing each of the three sentences once (v1's or v2's): each clip once between them
    assert int(v1["answers"]) == int(v2["answers"]) == 3
    words = {t: len(typed.words(s)) for t, s in said.items() if known[t][0] == "test" and known[t][2] == "v2"}
    assert float(v2["micro_wer"]) == pytest.approx(len(words) / sum(words.values()), abs=1e-4)
    assert float(v2["micro_ci95_low"]) <= float(v2["micro_wer"]) <= float(v2["micro_ci95_high"])
    # v1's answers added the script's words, as insertions
    assert float(v1["micro_wer"]) > 0 and float(v1["tolerant_micro_wer"]) == float(v1["micro_wer"])
    engine = rows["v1", "faster-whisper:tiny.en"]  # the runs' engine, on the same three clips
    heard = {r["sentence_id"]: r["hypothesis"] for r in store.read_csv(cwd / "results" / "v1" / "utterances.csv")}
    rated = {r["sentence"] for r in store.read_csv(out / "answers.csv") if r["system"] == "v1"}
    scored = [typed.score(r["reference"], heard[r["sentence_id"]]) for r in
              store.read_csv(cwd / "results" / "v1" / "utterances.csv") if r["sentence_id"] in rated]
    assert int(engine["answers"]) == 3
    assert float(engine["micro_wer"]) == pytest.approx(sum(s.strict.errors for s in scored) /
                                                       sum(s.strict.ref_words for s in scored), abs=1e-4)
    answers = store.read_csv(out / "answers.csv")
    assert {a["listener"] for a in answers} == {"ann", "bo"}
    for name in ("ann", "bo"):
        own = [a["sentence"] for a in answers if a["listener"] == name]
        assert len(own) == len(set(own)) == 3  # a sentence typed once is not typed again from memory
    assert any(HOSTILE in a["typed"] for a in answers)  # kept verbatim
    page = (out / "results.html").read_text()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page and "<script>alert" not in page
    summary = listen(cwd, "results", "typed.db", "--out", "typed-out").stdout
    assert "faster-whisper:tiny.en" in summary and "listeners" in summary
    (ranking,) = store.read_csv(out / "rankings.csv")
    assert ranking["listeners"] == "v2 < v1"  # the script made v1's answers the worse
    missed = {(m["system"], m["engine"]): m for m in store.read_csv(out / "misses.csv")}
    words_v2 = [w for w in store.read_csv(out / "words.csv") if w["system"] == "v2"]
    assert int(missed["v2", "faster-whisper:tiny.en"]["words"]) == len(words_v2) == sum(words.values())
    # each v2 sentence's first word: missed by both listeners kept, so by the listeners
    assert {w["missed_by"] for w in words_v2 if w["position"] == "1"} <= {"both", "listeners"}

    # the gate: each sentence's listeners' WER, paired by sentence, lower is better
    gate = subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "compare-runs", "v1", "v2", "--listening",
                           "typed.db", "--out", "typed-gate"], cwd=cwd, capture_output=True, text=True)
    assert gate.returncode == 0, gate.stderr
    (row,) = [r for r in store.read_csv(cwd / "typed-gate" / "run_comparison.csv") if r["metric"] == "listeners_wer"]
    per = {}
    for a in answers:
        per.setdefault((a["system"], a["sentence"]), []).append(int(a["errors"]) / int(a["words"]))
    mean = {k: sum(v) / len(v) for k, v in per.items()}
    shared = sorted({s for _, s in per})
    expected = sum(mean["v2", s] - mean["v1", s] for s in shared) / len(shared)
    assert int(row["sentences"]) == 3 and float(row["delta"]) == pytest.approx(expected, abs=1e-4)
    assert row["worse"] in ("False", "false", "0")  # v2's listeners missed fewer words than v1's
    # another version with the very same utterance ids (scored from one manifest, or from folders of one name)
    # hides none of v1's ratings, whichever order the runs come in
    shutil.copytree(cwd / "results" / "v1", tmp_path / "v1-again")
    v1, again = sealed.load("v1", str(cwd / "results")), sealed.load(str(tmp_path / "v1-again"))
    assert {u.id for u in again.utterances} == {u.id for u in v1.utterances}
    conn = database.connect(cwd / "typed.db")
    try:
        for order in ([v1, again], [again, v1]):
            rated, _ = analysis.human(conn, order)
            assert set(rated.of(v1, "v1", "clean")) == {s for s in shared if ("v1", s) in mean}
            assert not rated.of(again, "v1", "clean")
    finally:
        conn.close()
    # and a version with the same ids, prompted by another speaker, keeps its own speaker references
    from pipeline.io import audio
    from pipeline.listen.create import clips_of
    from pipeline.tts import base

    audio.write_wav(cwd / "prompts" / "q.wav", *base.load("piper:joe").synthesize("Another voice to sound like."))
    (cwd / "meta-q.lst").write_text((cwd / "meta.lst").read_text().replace("prompts/p.wav", "prompts/q.wav"))
    cli(cwd, *RUN, "--audio-manifest", "meta-q.lst", "--measures", "none", "--audio-dir", "out/v1", "--run", "v1-q",
        models=models_dir, cache=cwd / "cache")
    prompted = sealed.load("v1-q", str(cwd / "results"))
    by = clips_of([v1, prompted], ["clean"])
    references = by.pop("\0references")
    for run, prompt in ((v1, "p.wav"), (prompted, "q.wav")):
        spoken, _ = audio.read(cwd / "prompts" / prompt)
        own = [c for clips in by.values() for c in clips.values() if c.run_folder == run.where]
        assert own and all(np.array_equal(references[c.utterance].samples, spoken) for c in own), run.name

    # the run's report: the listeners' section with each answer, as text
    cli(cwd, *RUN, "--audio-dir", "out/v1", "--run", "v1", "--listening", "typed.db", models=models_dir,
        cache=cwd / "cache")
    report = (cwd / "results" / "v1" / "report.html").read_text()
    assert "answers.csv:" in report and "heard.csv:" in report and HOSTILE not in report
    scripted = next(a["typed"] for a in answers if HOSTILE in a["typed"])
    assert html.escape(scripted) in report  # the answer, shown as typed


def test_listeners_wer_by_snr_and_their_breakdown_snr_stand_beside_the_engines(runs, models_dir):
    """v1's wavs of six lines heard clean and in noise at 10 and −5 dB; a test of the three on those six sentences:
    a system for each condition, each listener types each sentence once, and `listen results` gives each
    condition's WER and the breakdown SNR for the listeners and for the run's engine, on the very audio the engine
    heard."""
    cwd = runs
    noisy = "clean,noise:snr=10,noise:snr=-5"
    (cwd / "six.lst").write_text("".join((cwd / "meta.lst").read_text().splitlines(keepends=True)[:6]))
    cli(cwd, *RUN, *NO_MEASURES, "--audio-manifest", "six.lst", "--audio-dir", "out/v1", "--run", "v1n",
        "--conditions", noisy, models=models_dir, cache=cwd / "cache")  # the later flags win
    made = listen(cwd, "create", "snr.db", "v1n", "--kind", "transcribe", "--condition", noisy, "--sentences",
                  "6").stdout
    assert "v1n @ noise:snr=-5" in made and "18 test trials" in made and "6 a session (each sentence once)" in made
    refused = listen(cwd, "create", "other.db", "v1n", "--kind", "transcribe", "--condition", "clean,noise:snr=3",
                     check=False)
    assert refused.returncode == 2 and "'noise:snr=3'" in refused.stderr and "noise:snr=10" in refused.stderr
    links = invite(cwd, "snr.db", "ann", "bo", "cy")
    known, said = oracle(cwd / "snr.db"), sentences(cwd / "snr.db")
    lost = {"v1n @ clean": 0, "v1n @ noise:snr=10": 1, "v1n @ noise:snr=-5": 4}  # words each answer leaves out

    def session(name):
        listener, typed_ = Listener(url, links[name]), []
        while not (t := listener.trial())["done"]:
            listener.hear(t)
            role, expected, system = known[t["trial"]]
            answer = expected if role in ("trap", "gold") else "practice" if role == "training" else \
                " ".join(said[t["trial"]].split()[lost[system]:]) or "-"
            typed_.append(t["trial"]) if role == "test" else None
            assert listener.vote(t, answer).status_code == 200
        return typed_

    with served(cwd, "snr.db") as (url, _):
        heard_by = together(["ann", "bo", "cy"], session)
    conn = sqlite3.connect(cwd / "snr.db")
    sentence_of = dict(conn.execute("SELECT id, sentence_id FROM trials"))
    conn.close()
    assert all(len(own) == len({sentence_of[t] for t in own}) == 6 for own in heard_by)  # each sentence once
    assert sorted(t for own in heard_by for t in own) == sorted(t for t, k in known.items() if k[0] == "test")
    listen(cwd, "results", "snr.db", "--out", "snr-out")
    out = cwd / "snr-out"
    rows = {r["by"]: r for r in store.read_csv(out / "breakdown.csv")}
    assert set(rows) == {"listeners", "faster-whisper:tiny.en"} and {r["system"] for r in rows.values()} == {"v1n"}
    answers = store.read_csv(out / "answers.csv")

    def wer(system):
        mine = [a for a in answers if a["system"] == system]
        return sum(int(a["errors"]) for a in mine) / sum(int(a["words"]) for a in mine)

    clean, at10, at_5 = (wer(f"v1n @ {c}") for c in noisy.split(","))
    people = rows["listeners"]
    assert float(people["clean_wer"]) == clean == 0 and float(people["threshold"]) == 0.02
    assert people["curve"] == f"10:{at10:.4f};-5:{at_5:.4f}"
    # the threshold 0.02 is crossed between clean and 10 dB's first measured point: at 10 dB already, or between
    expected = 10.0 if at10 >= 0.02 else 10 + (0.02 - at10) * (-5 - 10) / (at_5 - at10)
    assert float(people["breakdown_snr"]) == pytest.approx(expected, abs=0.01)
    engine = rows["faster-whisper:tiny.en"]
    utterances = store.read_csv(cwd / "results" / "v1n" / "utterances.csv")
    rated = {a["sentence"] for a in answers}

    def engine_wer(condition):
        found = [typed.score(u["reference"], u["hypothesis"]).strict for u in utterances
                 if u["condition"] == condition and u["sentence_id"] in rated]
        return sum(f.errors for f in found) / sum(f.ref_words for f in found)

    assert float(engine["clean_wer"]) == pytest.approx(engine_wer("clean"), abs=1e-4)
    assert engine["curve"] == f"10:{engine_wer('noise:snr=10'):.4f};-5:{engine_wer('noise:snr=-5'):.4f}"
    summary = listen(cwd, "results", "snr.db", "--out", "snr-out").stdout
    assert "v1n, listeners: WER clean 0.0, 10 dB" in summary and "breakdown SNR" in summary


@pytest.mark.skipif(CHROMIUM is None or CHROMEDRIVER is None,
                    reason="needs Debian chromium and chromium-driver (scripts/setup --test)")
def test_a_listener_types_in_a_real_browser_and_enter_submits(runs, tmp_path):
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    cwd = runs
    create(cwd, "web-typed.db", "--kind", "transcribe", "--sentences", "2", "--trials", "2")
    links = invite(cwd, "web-typed.db", "ann")
    with served(cwd, "web-typed.db") as (url, _):
        driver = browser(tmp_path / "typing")
        try:
            driver.get(url + "/l/" + links["ann"].rsplit("/l/", 1)[1])
            WebDriverWait(driver, 30).until(lambda d: d.find_element("id", "progress").text.startswith("Trial 1 "))
            total = re.match(r"Trial 1 of (\d+)", driver.find_element("id", "progress").text).group(1)
            assert "type the words you heard" in driver.find_element("css selector", ".how").text
            field = driver.find_element("id", "typed")
            assert not field.is_enabled()  # nothing to type before the recording is heard
            driver.execute_script("document.querySelector('audio').play()")
            WebDriverWait(driver, 30).until(lambda d: d.find_element("id", "typed").is_enabled())
            audio = driver.find_element("css selector", "audio")
            assert audio.get_attribute("controls") is None  # played once: the page offers it no more
            assert driver.switch_to.active_element == driver.find_element("id", "typed")
            driver.find_element("id", "typed").send_keys(HOSTILE + " and more", Keys.ENTER)
            progress(driver, f"Trial 2 of {total}")
        finally:
            driver.quit()
    conn = sqlite3.connect(cwd / "web-typed.db")
    assert conn.execute("SELECT text, value FROM votes").fetchall() == [(HOSTILE + " and more", None)]


def quietest(wav: bytes, loudspeakers: bool) -> int:
    """Which of a headphone check's three tones sounds quietest: in each ear (headphones), or as the two
    channels meet in the air (loudspeakers, their sum)."""
    import io

    import numpy as np
    import soundfile

    samples, rate = soundfile.read(io.BytesIO(wav))
    heard = samples.sum(axis=1) if loudspeakers else samples[:, 0]
    thirds = np.array_split(heard[: len(heard) // 3 * 3], 3)  # the tones, and the gaps between them, in order
    return int(np.argmin([np.sqrt(np.mean(t ** 2)) for t in thirds])) + 1


def test_the_hearing_and_headphone_checks_come_first_and_leave_out_who_fails_them(runs):
    cwd = runs
    made = listen(cwd, "create", "hearing.db", "v1", "v2", "--qualify", "--headphones", "--sentences", "2",
                  "--trials", "4").stdout
    assert "3 hearing check, 6 headphone check" in made
    links = invite(cwd, "hearing.db", "ann", "bo", "cy")
    known = oracle(cwd / "hearing.db")
    conn = sqlite3.connect(cwd / "hearing.db")
    check = dict(conn.execute("SELECT id, sentence_id FROM trials WHERE role = 'qualification'"))
    conn.close()

    def session(name):
        listener = Listener(url, links[name])
        first = []
        while not (t := listener.trial())["done"]:
            listener.hear(t)
            role, expected, system = known[t["trial"]]
            first.append((role, t["widget"]))
            if role == "qualification" and check[t["trial"]].startswith("tones-"):
                # cy listens over loudspeakers: the antiphase tone cancels in the air and sounds the quietest
                answer = quietest(listener.client.get(f"/audio/{t['clips'][0]}").content, name == "cy")
                assert (answer == expected) is (name != "cy")
            elif role == "qualification":
                easiest = check[t["trial"]] == "digits-+6"
                answer = "0 0 0" if name == "bo" and easiest else " ".join(
                    ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"][int(d)]
                    for d in expected)  # typed as words: the digits all the same
            else:
                answer = expected if role in ("trap", "gold") else 4 if system == "v1" else 2  # ratings that vary
            assert listener.vote(t, answer).status_code == 200, (role, answer)
        return first

    with served(cwd, "hearing.db") as (url, _):
        ann, _, _ = together(["ann", "bo", "cy"], session)
    assert ann[:9] == [("qualification", "scale")] * 6 + [("qualification", "text")] * 3 and ann[9][0] == "training"
    listen(cwd, "results", "hearing.db", "--out", "hearing-out")
    found = store.read_json(cwd / "hearing-out" / "results.json")
    left = {e["listener"]: e["reasons"] for e in found["excluded"]}
    assert set(left) == {"bo", "cy"} and found["accepted"] == 1
    assert "hearing check at +6 dB SNR answered '0 0 0'" in left["bo"][0]
    assert left["cy"] == ["the headphone check: the quietest tone picked in 0 of 6 trials (headphones in both ears "
                          "pick it in 5 or more; over loudspeakers the antiphase tone sounds quietest)"]
