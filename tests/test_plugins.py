"""A command, a statistic, a report section, a measure that needs a natural recording and a listening-test kind,
added from outside the package as an installed plugin adds them: a module named by entry points, found on the path, with no file of the
pipeline edited."""
import json
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
from pipeline.listen.kinds import KINDS
from pipeline.listen.kinds.mos import Rating
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
KINDS.register(Rating(name="quality10", summary="each clip rated 1-10", title="How good is this speech, 1 to 10?",
                      scale=tuple((v, "best" if v == 10 else "worst" if v == 1 else "") for v in range(10, 0, -1)),
                      good=8, bad=1))
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
        "[speech_eval.sections]\nlengths = hello_plugin\n[speech_eval.measures]\nlength_ratio = hello_plugin\n"
        "[speech_eval.listening]\nquality10 = hello_plugin\n")
    return {**os.environ, "PYTHONPATH": str(site), "TQDM_DISABLE": "1"}


def test_a_plugins_command_runs_and_the_help_lists_it(plugin, tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "hello", "world"], cwd=tmp_path,
                          capture_output=True, text=True, env=plugin)
    assert proc.returncode == 0 and proc.stdout == "hello from a plugin: world\n", proc.stderr
    usage = subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "--help"], cwd=tmp_path,
                           capture_output=True, text=True, env=plugin).stdout
    assert "run_pipeline.py hello [WORDS]" in usage and "say hello" in usage


KIND_AT_WORK = """
import json
from pipeline.listen import analysis
from pipeline.listen.kinds import KINDS

kind = KINDS.get("quality10")
clips = {c: {"system": s, "sentence": c[-1], "run": "r", "run_folder": "", "voice": "", "utterance_id": c,
             "source_sha256": "", "measures": {}} for c, s in (("a1", "A"), ("a2", "A"), ("b1", "B"), ("b2", "B"))}
votes = [analysis.Vote(k, f"l{k}", c, "test", v, kind.oriented(v, False), None, c[-1], c, None, True, 1)
         for k in range(3) for c, v in (("a1", 9), ("a2", 8), ("b1", 3), ("b2", 2 + k))]
found = analysis.Analysis(test="t", kind=kind.name, listeners=3, accepted=3, votes=len(votes))
kind.analyse(found, votes, clips, 200, 0)
print(json.dumps({"page": kind.page(["c"]), "refused": [kind.refused(v) for v in (10, 11, "10")],
                  "systems": {s.system: s.mean for s in found.systems}, "differences": len(found.differences),
                  "said": kind.said(1), "metric": kind.metric}))
"""


def test_a_plugins_listening_kind_is_offered_and_does_what_its_class_does(plugin, tmp_path):
    helped = subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "listen", "create", "--help"],
                            cwd=tmp_path, capture_output=True, text=True, env=plugin).stdout
    assert "quality10: each clip rated 1-10" in " ".join(helped.split())
    proc = subprocess.run([sys.executable, "-c", KIND_AT_WORK], cwd=ROOT, capture_output=True, text=True, env=plugin)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["page"]["scale"][0] == [10, "10 best"] and len(found["page"]["scale"]) == 10
    assert found["page"]["widget"] == "scale" and found["page"]["names"] == ["Recording"]
    assert found["refused"][0] is None and "11" in found["refused"][1] and found["refused"][2]  # a string is no int
    assert found["systems"] == {"A": 8.5, "B": 3.0} and found["differences"] == 1
    assert found["said"] == "1 (worst)" and found["metric"] == "listeners_quality10"


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
