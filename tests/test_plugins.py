"""A command, a statistic, a report section and a measure that needs a natural recording, added from outside the
package as an installed plugin adds them: a module named by entry points, found on the path, with no file of the
pipeline edited."""
import os
import subprocess
import sys

import pytest
import soundfile as sf

from pipeline.core import store
from tests.helpers import ROOT, TINY, cli

PLUGIN = '''
from dataclasses import dataclass

from pipeline.cli.command import COMMANDS, Command
from pipeline.core.source import Source
from pipeline.measures.base import MEASURES, NATURAL, Declaration, Scores
from pipeline.render.html import SECTIONS, Section
from pipeline.statistics import STATISTICS, Statistic


def hello(argv):
    print("hello from a plugin:", " ".join(argv))
    return 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Length:
    voice: str
    condition: str
    mean_words: float  # reference words per scored utterance


def lengths(given):
    out = {}
    for u in given.scores.utterances:
        if u.ref_words is not None:
            out.setdefault((u.voice, u.condition), []).append(u.ref_words)
    return [Length(voice=v, condition=c, mean_words=sum(n) / len(n)) for (v, c), n in out.items()]


def section(page):
    return "".join(f"<h2>Lengths</h2><p id='lengths'>{r.condition}: {r.mean_words:g} words</p>"
                   for r in page.stats["lengths"])


class LengthRatio:
    def __init__(self, source):
        pass

    def score(self, audio, natural):
        if natural is None:
            return Scores({"length_ratio": None}, ("no natural recording",))
        return Scores({"length_ratio": round(len(audio) / len(natural), 6)})


MEASURES.register(Declaration(name="length_ratio", columns={"length_ratio": "samples against the natural recording's"},
                              source=lambda: Source(spec="length_ratio:none", found="package", path="", files=()),
                              load=LengthRatio, needs=(NATURAL,), better="higher", predicts=""))
COMMANDS.register(Command("hello", "[WORDS]", "say hello", hello))
STATISTICS.register(Statistic("lengths", "lengths.csv", Length, lengths))
SECTIONS.register(Section("lengths", 15, ("lengths",), section))
'''


@pytest.fixture
def plugin(tmp_path) -> dict:
    """The plugin's module and its distribution's metadata, on PYTHONPATH: what pip leaves in site-packages."""
    site = tmp_path / "site"
    (site / "hello_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "hello_plugin.py").write_text(PLUGIN)
    (site / "hello_plugin-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: hello-plugin\n"
                                                                  "Version: 1.0\n")
    (site / "hello_plugin-1.0.dist-info" / "entry_points.txt").write_text(
        "[speech_eval.commands]\nhello = hello_plugin\n[speech_eval.statistics]\nlengths = hello_plugin\n"
        "[speech_eval.sections]\nlengths = hello_plugin\n[speech_eval.measures]\nlength_ratio = hello_plugin\n")
    return {**os.environ, "PYTHONPATH": str(site), "TQDM_DISABLE": "1"}


def test_a_plugins_command_runs_and_the_help_lists_it(plugin, tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "hello", "world"], cwd=tmp_path,
                          capture_output=True, text=True, env=plugin)
    assert proc.returncode == 0 and proc.stdout == "hello from a plugin: world\n", proc.stderr
    usage = subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "--help"], cwd=tmp_path,
                           capture_output=True, text=True, env=plugin).stdout
    assert "run_pipeline.py hello [WORDS]" in usage and "say hello" in usage


@pytest.mark.slow
def test_a_plugins_statistic_and_section_reach_the_run(plugin, tmp_path, models_dir, piper_speech):
    texts, speech = piper_speech
    for i, samples in enumerate(speech[:2]):
        sf.write(tmp_path / f"r{i}.wav", samples, 16000)
    (tmp_path / "m.tsv").write_text("id\taudio\treference\tnatural\n" + "".join(
        f"r{i}\tr{i}.wav\t{t}\t{'r1.wav' if i == 0 else ''}\n" for i, t in enumerate(texts[:2])))
    cli(tmp_path, "--audio-manifest", "m.tsv", *TINY, "--measures", "length_ratio", models=models_dir, env=plugin)
    run = tmp_path / "results" / "default"
    ratios = {r["sentence_id"]: r["length_ratio"] for r in store.read_csv(run / "utterances.csv")}
    assert float(ratios["r0"]) == pytest.approx(len(speech[0]) / len(speech[1]), abs=1e-6) and ratios["r1"] == ""
    words = [len(t.replace(",", "").split()) for t in texts[:2]]
    assert (run / "lengths.csv").read_text().splitlines() == ["voice,condition,mean_words",
                                                              f",clean,{sum(words) / 2}"]
    page = (run / "report.html").read_text()
    assert f"clean: {sum(words) / 2:g} words" in page  # drawn by its section, between the corpus and comparisons
    assert page.index("<h2>Corpus figures</h2>") < page.index("<h2>Lengths</h2>") < page.index("<h2>Comparisons")
