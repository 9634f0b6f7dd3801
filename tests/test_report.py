"""The HTML report in a real headless browser (Debian chromium)."""
import base64
import hashlib
import io
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.helpers import NO_MEASURES, SENTENCES, browser, built_once, cli, probed, small_run, write_sentences

pytestmark = pytest.mark.slow  # real models and pipeline runs: left out of `pytest -m "not slow"`

CHROMIUM = shutil.which("chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000"]


def chromium(page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp / 'profile'}", *extra, page.as_uri()],
                          capture_output=True, text=True, timeout=120)


def console_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


@pytest.fixture(scope="module")
def report(tmp_path_factory, worker_id, models_dir) -> Path:
    cwd = built_once(tmp_path_factory, worker_id, "small-run", lambda folder: small_run(folder, models_dir))
    return cwd / "results" / "default" / "report.html"


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian chromium (scripts/setup --test)")
def test_console_capture_works_on_a_broken_page(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>console.error('boom'); missingFunction();</script></body></html>")
    assert len(console_lines(chromium(page, tmp_path, "--dump-dom").stderr)) == 2


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian chromium (scripts/setup --test)")
def test_report_loads_without_console_errors_and_its_audio_exists(report, tmp_path):
    proc = chromium(report, tmp_path, "--dump-dom")
    assert proc.returncode == 0
    assert console_lines(proc.stderr) == []
    dom = proc.stdout
    sources = re.findall(r'<audio[^>]*src="([^"]+)"', dom)
    assert len(sources) == 8  # 4 sentences × (clean, noise)
    played = {base64.b64decode(src.removeprefix("data:audio/flac;base64,")) for src in sources}
    from pipeline.core import store

    heard = {r["audio_path"] for r in store.read_csv(report.parent / "utterances.csv")}
    for wav in heard:  # each player carries its wav's samples, losslessly
        samples, _ = sf.read(report.parent / wav, dtype="int16")  # audio_path is relative to the run folder
        assert any(np.array_equal(sf.read(io.BytesIO(flac), dtype="int16")[0], samples) for flac in played), wav
    assert dom.count('<img alt="') >= 2 and "only sentences with" in dom
    assert "<h2>Naturalness and voice</h2>" in dom and "Speaker similarity between voices" in dom  # the default
    # measures' section, its similarity cells shaded by the page's pinned script
    assert re.search(r'data-shade="(\d+)"[^>]*style="background: rgb\(\1, \1, 255\);"', dom)
    assert '<select id="only-flag"' in dom and '<option value="silent_audio">' in dom

    rows = store.read_csv(report.parent / "utterances.csv")
    errors = {op: sum(int(r[name] or 0) for r in rows) for op, name in
              (("S", "substitutions"), ("D", "deletions"), ("I", "insertions"))}
    assert sum(errors.values()) > 0  # 5 dB of noise: tiny.en makes errors to show
    legend = 1  # the key under the table names each kind once
    assert dom.count('<span class="S">') == 2 * errors["S"] + legend  # marked on the reference and the hypothesis
    assert dom.count('<span class="D">') == errors["D"] + legend
    assert dom.count('<span class="I">') == errors["I"] + legend


class Inline(HTMLParser):
    """What a page runs and styles inline: its executable scripts' text, and every on* or style attribute."""

    def __init__(self):
        super().__init__()
        self.scripts, self.attributes, self.policy, self._open = [], [], "", False

    def handle_starttag(self, tag, attrs):
        self.attributes += [f"<{tag} {k}>" for k, _ in attrs if k.startswith("on") or k == "style"]
        if tag == "script":
            self._open = dict(attrs).get("type") != "application/json"
            if self._open:
                self.scripts.append("")
        if tag == "meta" and dict(attrs).get("http-equiv") == "Content-Security-Policy":
            self.policy = dict(attrs)["content"]

    def handle_endtag(self, tag):
        self._open = False if tag == "script" else self._open

    def handle_data(self, data):
        if self._open:
            self.scripts[-1] += data


@pytest.mark.skipif(CHROMIUM is None or shutil.which("chromedriver") is None,
                    reason="needs Debian chromium and chromium-driver (scripts/setup --test)")
def test_the_report_runs_only_its_pinned_script_which_sorts_and_filters_without_inline_handlers(report, tmp_path):
    from selenium.webdriver.common.by import By

    page = Inline()
    page.feed(report.read_text())
    assert page.attributes == []  # no onclick, no onchange, no style attribute: nothing CSP would have to allow
    (script,) = page.scripts
    pinned = "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"
    assert f"script-src {pinned};" in page.policy and "unsafe-inline" not in page.policy
    assert "default-src 'none'" in page.policy
    driver = browser(tmp_path / "profile")
    try:
        driver.get(report.as_uri())
        table = driver.find_element(By.ID, "utts")
        heads = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
        column = heads.index("WER")

        def wers():
            return [float(r.find_elements(By.TAG_NAME, "td")[column].text or "nan")
                    for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")]
        table.find_elements(By.CSS_SELECTOR, "thead th")[column].click()
        ascending = wers()
        assert ascending == sorted(ascending) and ascending[0] < ascending[-1]
        table.find_elements(By.CSS_SELECTOR, "thead th")[column].click()
        assert wers() == ascending[::-1]
        driver.find_element(By.ID, "only-errors").click()
        shown = [r for r in table.find_elements(By.CSS_SELECTOR, "tbody tr") if r.is_displayed()]
        assert 0 < len(shown) < len(ascending) and all(float(r.find_elements(By.TAG_NAME, "td")[column].text) > 0
                                                        for r in shown)
        assert all(a.get_attribute("src").startswith("data:audio/flac;base64,")
                   for a in driver.find_elements(By.TAG_NAME, "audio"))
        refused = [e["message"] for e in driver.get_log("browser") if "Content Security Policy" in e["message"]]
        assert refused == []
    finally:
        driver.quit()


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian chromium (scripts/setup --test)")
def test_the_report_copied_alone_to_another_folder_still_plays_its_audio(report, tmp_path):
    elsewhere = tmp_path / "moved"
    elsewhere.mkdir()
    # the page as a user copies it, plus a probe that loads every player and writes what the browser decoded
    probe = ("const a=[...document.querySelectorAll('audio')];let n=0;a.forEach(x=>{x.preload='auto';"
             "x.addEventListener('loadedmetadata',()=>{n++;document.body.dataset.decoded=n+':'+x.duration.toFixed(2)});"
             "x.load()});")
    (elsewhere / "report.html").write_text(probed(report.read_text(), probe))
    dom = chromium(elsewhere / "report.html", tmp_path, "--dump-dom", "--autoplay-policy=no-user-gesture-required").stdout
    decoded = re.search(r'data-decoded="(\d+):([\d.]+)"', dom)
    assert decoded and int(decoded.group(1)) == 8 and float(decoded.group(2)) > 1, dom[-500:]


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian chromium (scripts/setup --test)")
def test_report_screenshot(report, tmp_path):
    shot = tmp_path / "report.png"
    proc = chromium(report, tmp_path, f"--screenshot={shot}", "--window-size=1280,1600")
    assert proc.returncode == 0 and shot.exists()
    from PIL import Image

    with Image.open(shot) as img:
        assert img.size == (1280, 1600)
        colors = img.convert("RGB").getcolors(maxcolors=1 << 20)
        assert colors is not None and len(colors) > 50  # a rendered page, not a blank one


@pytest.fixture(scope="module")
def matrix(tmp_path_factory, models_dir) -> tuple[Path, subprocess.CompletedProcess]:
    """The README's matrix shape: 3 voices × 2 engines × 3 conditions, on three sentences; without measures, whose
    section the `report` page shows in the browser (the measures on every clip were most of this run's time). The
    two engines are the cheapest pair, faster-whisper's full window and its trimmed one: with openai-whisper, half
    this run's CPU time (each engine's own checks are test_asr.py's and test_invariance.py's)."""
    cwd = tmp_path_factory.mktemp("matrix")
    sentences = write_sentences(cwd / "s.txt", SENTENCES[:3])
    proc = cli(cwd, "--sentences", str(sentences), *NO_MEASURES, "--voices", "piper:joe,flite:slt,espeak:en-us",
               "--asr", "faster-whisper:tiny.en,faster-whisper-trim:tiny.en", "--conditions",
               "clean,noise:snr=10,noise:snr=0", "--set", "score.bootstrap=200", models=models_dir)
    return cwd / "results" / "default" / "report.html", proc


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian chromium (scripts/setup --test)")
def test_the_matrix_report_shows_every_statistic_and_its_links_resolve(matrix, tmp_path):
    page, proc = matrix
    assert "most confident comparisons" in proc.stdout
    rendered = chromium(page, tmp_path, "--dump-dom")
    assert rendered.returncode == 0 and console_lines(rendered.stderr) == []
    dom = rendered.stdout
    for heading in ("Comparisons", "Normalizer sensitivity", "Text difficulty", "Hardest words", "Robustness"):
        assert f"<h2>{heading}</h2>" in dom, heading
    grid = dom[dom.index('<table class="matrix">'):]
    grid = grid[:grid.index("</table>")]
    assert grid.count("<tr><th>") == 1 + 18  # the comparison matrix: its header, a row per voice × engine × condition
    # one table per factor, with the pairs that differ in it alone: 3 voice pairs in each of 6 engine × condition
    # cells, 1 engine pair in each of 9, 3 condition pairs in each of 6; the full matrix folded behind them
    for title, n in (("Voices, within each engine and condition", 18), ("Engines, within each voice and condition", 9),
                     ("Conditions, within each voice and engine", 18)):
        assert f"<h3>{title} ({n} pairs)</h3>" in dom, title
    assert "<details><summary>Every pair as a matrix (153 pairs" in dom
    targets = set(re.findall(r'id="(u-[^"]+)"', dom))
    links = re.findall(r'href="#(u-[^"]+)"', dom)
    assert links and set(links) <= targets
    shot = tmp_path / "matrix.png"
    assert chromium(page, tmp_path, f"--screenshot={shot}", "--window-size=1400,4000").returncode == 0
    from PIL import Image

    with Image.open(shot) as img:
        assert len(img.convert("RGB").getcolors(maxcolors=1 << 22)) > 50


def test_the_matrix_statistics_files(matrix):
    from pipeline.core import records
    from pipeline.statistics.comparisons import Comparison
    from pipeline.statistics.robustness import Breakdown
    from pipeline.statistics.sensitivity import NormalizerEffect

    run = matrix[0].parent
    pairs = records.read_csv(run / "comparisons.csv", Comparison)
    assert len(pairs) == 18 * 17 // 2
    assert all(0 <= c.mapsswe_p <= c.mapsswe_p_holm <= 1 for c in pairs)
    assert sum(c.holm_family == "one-factor" for c in pairs) == 45 and {c.differs for c in pairs} == {
        "voice", "asr", "condition", "voice+asr", "voice+condition", "asr+condition", "voice+asr+condition"}
    assert len(records.read_csv(run / "normalizers.csv", NormalizerEffect)) == 18
    breakdowns = records.read_csv(run / "breakdown.csv", Breakdown)
    assert len(breakdowns) == 6 and all(len(b.curve) == 2 for b in breakdowns)
