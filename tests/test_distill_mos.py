"""Distill-MOS (pipeline/measures/distill_mos.py) against the distillmos package's own model on the same 16 kHz
arrays: clips shorter than one window and of several windows, clean and in noise, three voices; each utterance
alone; its bad inputs; its weights' damage found before any work; its column in every table of a real run."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pipeline.measures import base
from tests.helpers import OWN_CACHE, ROOT, TINY, distillmos_reference, write_sentences
from tests.test_measures import noisy, voices_speech  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def theirs():
    """The package's own ConvTransformerSQAModel (tests/helpers.py: how it is imported without torchaudio)."""
    return distillmos_reference()


@pytest.fixture(scope="module")
def ours():
    from pipeline.measures import distill_mos

    return distill_mos.DistillMOS(distill_mos.source())


def test_distill_mos_equals_the_packages_own_model(voices_speech, theirs, ours):  # noqa: F811
    lengths = set()
    for line, (voice, clips) in enumerate(voices_speech.items()):  # each voice family its own line
        clean = clips[line]
        long = np.concatenate([clean, clean, clean, clean])  # several 7.68 s windows, 1 s apart at most
        for kind, x in (("clean", clean), ("noise", noisy(clean, 5)), ("long", long), ("short", clean[:6000])):
            got = ours.score(x).values["distill_mos"]
            assert got == pytest.approx(theirs(x), abs=1e-4), (voice, kind, len(x))
            assert 1 <= got <= 5
            lengths.add(len(x) > 122880)
    assert lengths == {True, False}  # clips shorter than a window, and of several


def test_each_utterance_is_scored_alone(voices_speech):  # noqa: F811
    """Batch size, order, neighbours and threads change no value."""
    from pipeline.measures.assessor import Assessor, Clip

    clips = [x for xs in voices_speech.values() for x in xs]
    source = base.MEASURES.get("distill_mos").source()
    alone = [Assessor("distill_mos", source, 1).work([Clip(x)])[0].scores.values for x in clips]
    together = Assessor("distill_mos", source, 2).work([Clip(x) for x in clips])
    backwards = Assessor("distill_mos", source, 2).work([Clip(x) for x in reversed(clips)])[::-1]
    assert [d.scores.values for d in together] == alone == [d.scores.values for d in backwards]


def test_silence_and_a_short_clip_say_what_was_done(ours):
    silent = ours.score(np.zeros(16000, dtype=np.float32))
    assert silent.values == {"distill_mos": None} and "silent" in silent.notes[0]
    blip = ours.score((0.3 * np.sin(np.arange(4000) / 5)).astype(np.float32))  # 0.25 s
    assert blip.values["distill_mos"] is not None and "zero-pads it to 7.68 s" in blip.notes[0]


def test_it_is_on_by_default_where_its_package_is_installed():
    assert "distill_mos" in base.selected(base.AssessConfig())
    absent = base.Declaration(name="absent_measure", columns={"absent": "a measure whose package is not here"},
                              source=lambda: None, load=lambda source: None, installed=lambda: False)
    base.MEASURES.register(absent)
    try:
        assert "absent_measure" not in base.selected(base.AssessConfig())
        assert base.selected(base.AssessConfig(measures=["absent_measure"])) == ["absent_measure"]
    finally:
        base.MEASURES._declared.pop("absent_measure")


@pytest.mark.parametrize("damage", ["missing", "torn"])
def test_missing_or_damaged_weights_are_exit_2_before_any_work(tmp_path, models_dir, damage):
    """A distillmos installed without its weights, or with a torn copy, found first on the path."""
    from pipeline.measures import distill_mos

    weights = Path(distill_mos.source().path)
    package = tmp_path / "site" / "distillmos"
    (package / "weights").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    if damage == "torn":
        (package / "weights" / weights.name).write_bytes(weights.read_bytes()[:5_000_000])
    write_sentences(tmp_path / "s.txt", ["Now is the winter of our discontent."])
    proc = subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "--set", f"models_dir={models_dir}",
                           *OWN_CACHE, "--sentences", "s.txt", *TINY, "--measures", "distill_mos"], cwd=tmp_path,
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(tmp_path / "site"), "TQDM_DISABLE": "1"})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert str(package / "weights" / weights.name) in proc.stderr
    assert ("is missing" if damage == "missing" else "not a torch checkpoint") in proc.stderr
    assert not (tmp_path / "audio").exists()  # before any work: not one wav spoken


def test_its_column_reaches_every_table_of_a_run(tmp_path, models_dir):
    from pipeline.core import store

    write_sentences(tmp_path / "s.txt", ["Now is the winter of our discontent.", "To be, or not to be."])
    for run, voices in (("a", "piper:joe"), ("b", "piper:joe,espeak:en-us")):  # b hears and measures espeak alone
        proc = subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "--set", f"models_dir={models_dir}",
                               "--set", f"cache_dir={tmp_path / 'cache'}", "--sentences", "s.txt", *TINY, "--voices",
                               voices, "--run", run],
                              cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "TQDM_DISABLE": "1"})
        assert proc.returncode == 0, proc.stderr[-2000:]
    out = tmp_path / "results" / "b"
    rows = store.read_csv(out / "utterances.csv")
    assert all(1 <= float(r["distill_mos"]) <= 5 for r in rows)
    header = list(rows[0])
    assert header.index("distill_mos") + 1 == header.index("dnsmos_sig")  # beside the DNSMOS columns
    assert {r["measure"] for r in store.read_csv(out / "measure_summary.csv")} >= {"distill_mos", "dnsmos_ovrl"}
    assert "distill_mos" in {r["measure"] for r in store.read_csv(out / "measure_comparisons.csv")}
    page = (out / "report.html").read_text()
    assert "<code>distill_mos</code>" in page and "<b>distill_mos</b> compares with" in page
    proc = subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "compare-runs", "a", "b"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "distill_mos:" in proc.stdout, proc.stderr[-2000:]
    assert "distill_mos compares with the distillmos package's own model" in proc.stdout
