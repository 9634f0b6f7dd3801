"""The HTML report in a real headless browser (Debian chromium)."""
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.test_pipeline import SENTENCES, TINY, cli, write_sentences

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
def report(tmp_path_factory, models_dir) -> Path:
    cwd = tmp_path_factory.mktemp("report")
    sentences = write_sentences(cwd / "s.txt", SENTENCES[:4])
    cli(cwd, "--sentences", str(sentences), *TINY, "--conditions", "clean,noise:snr=5", models=models_dir)
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
    for src in sources:
        assert (report.parent / unquote(src)).resolve().is_file(), src
    assert dom.count('<img alt="') >= 2 and "only sentences with" in dom
    assert '<select id="only-flag"' in dom and '<option value="silent_audio">' in dom
    assert 'class="S"' in dom or 'class="D"' in dom or 'class="I"' in dom or "WER" in dom


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
