"""Measures against a natural recording of the same sentence: MCD equals pymcd 0.2.1's MCD-DTW, the F0 error finds a
pitch shift made with WORLD, the natural recording comes from the manifest (a TSV or NeMo column, seed-tts' gt_wav,
an LJSpeech folder's own wavs beside --audio-dir), and a row without one gets an empty value and a note."""
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pipeline.core import store
from pipeline.errors import ConfigError
from pipeline.io import audio, manifests
from pipeline.measures import base
from tests.helpers import TINY, cli

LINES = ["Now is the winter of our discontent.", "To be, or not to be, that is the question.",
         "My lord, I will go with you to the king."]
pytestmark = pytest.mark.skipif(not base.MEASURES.get("mcd").installed(), reason="scripts/setup --test installs "
                                "pyworld, pysptk and fastdtw")


def pymcd():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # pkg_resources, imported by pyworld and pysptk
        from pymcd.mcd import Calculate_MCD
    return Calculate_MCD("dtw")


@pytest.fixture(scope="module")
def spoken(tmp_path_factory) -> dict[str, list[Path]]:
    """Each line by three voices, as wavs at each voice's own rate (22,050 Hz espeak and piper, 16 kHz flite)."""
    from pipeline.tts import base as tts

    folder = tmp_path_factory.mktemp("spoken")
    out = {}
    for name in ("piper:joe", "espeak:en-us", "flite:slt"):
        voice = tts.load(name)
        out[name] = []
        for i, line in enumerate(LINES):
            samples, sr = voice.synthesize(line)
            path = folder / f"{name.replace(':', '-')}-{i}.wav"
            audio.write_wav(path, samples, sr)
            out[name].append(path)
    return out


@pytest.mark.slow
def test_mcd_equals_pymcd_on_every_pair_of_voices(spoken):
    from pipeline.measures import mcd
    from pipeline.stages.assess import load

    theirs = pymcd()
    pairs = [(spoken[n][i], spoken[s][i]) for i in range(2) for n, s in
             (("piper:joe", "espeak:en-us"), ("espeak:en-us", "flite:slt"), ("flite:slt", "piper:joe"))]
    for natural, synthesized in pairs:
        ours = mcd.aligned(load(str(synthesized), mcd.RATE), load(str(natural), mcd.RATE)).mcd()
        assert ours == pytest.approx(theirs.calculate_mcd(str(natural), str(synthesized)), abs=1e-9)
    same = mcd.MelCepstralDistortion(None).score(load(str(pairs[0][0]), mcd.RATE),
                                                 natural=load(str(pairs[0][0]), mcd.RATE))
    assert same.values == {"mcd": 0.0}


def tone(cents: float, glide: float = 0.0) -> np.ndarray:
    """1.5 s of a harmonic tone at 130 Hz raised `cents`, its pitch swinging ± `glide` Hz, with 150 ms of silence."""
    from pipeline.measures import mcd

    t = np.arange(int(1.5 * mcd.RATE)) / mcd.RATE
    f0 = (130 + glide * np.sin(2 * np.pi * 0.7 * t)) * 2 ** (cents / 1200)
    phase = 2 * np.pi * np.cumsum(f0) / mcd.RATE
    x = sum(np.sin(h * phase) / h for h in range(1, 16)) * np.minimum(1, np.minimum(t, t[-1] - t) / 0.05)
    x[int(0.7 * mcd.RATE):int(0.85 * mcd.RATE)] = 0
    return (0.3 * x / np.abs(x).max()).astype(np.float32)


def test_f0_rmse_finds_a_known_pitch_shift():
    """A steady tone raised k cents: an error of k cents, the silence unvoiced in both. A gliding tone shows what
    alignment on mel-cepstra does: it absorbs part of the shift into the time warp (docs/manifests.md)."""
    from pipeline.measures import f0_rmse

    measure = f0_rmse.F0Error(None)
    assert measure.score(tone(0), natural=tone(0)).values == {"f0_rmse": 0.0, "vuv_error": 0.0}
    for k in (50, 100, 300, -200):
        found = measure.score(tone(k), natural=tone(0)).values
        assert found["f0_rmse"] == pytest.approx(abs(k), abs=3) and found["vuv_error"] < 0.02, (k, found)
    assert measure.score(tone(300, glide=40), natural=tone(0, glide=40)).values["f0_rmse"] < 250
    none = measure.score(tone(0), natural=None)
    assert none.values == {"f0_rmse": None, "vuv_error": None} and "no natural recording" in none.notes[0]
    silent = measure.score(np.zeros(22050, np.float32), natural=tone(0))
    assert silent.values["f0_rmse"] is None and "silent" in silent.notes[0]


def test_a_measure_declares_its_needs_by_name_and_an_old_spelling_is_refused():
    mcd = base.MEASURES.get("mcd")
    assert mcd.needs == (base.NATURAL,) and mcd.rate == 22050 and mcd.better == "lower"
    assert base.MEASURES.get("speaker_sim").needs == (base.SPEAKER_REFERENCE,)
    # most runs have no natural recording: MCD runs when named, never by default
    assert "mcd" not in base.MEASURES.default() and "f0_rmse" not in base.MEASURES.default()
    assert "dnsmos" in base.MEASURES.default()
    with pytest.raises(ConfigError, match="speaker_reference, passed to score"):
        base.Declaration(name="x", columns={}, source=lambda: None, load=lambda s: None,
                         needs=("speaker reference",))
    with pytest.raises(ConfigError, match="'transcript': not a need"):
        base.Declaration(name="x", columns={}, source=lambda: None, load=lambda s: None, needs=("transcript",))


def test_manifests_name_the_natural_recording(tmp_path):
    for name in ("g.wav", "n.wav", "p.wav"):
        sf.write(tmp_path / name, np.zeros(1600, np.float32), 16000)
    (tmp_path / "m.tsv").write_text(f"id\taudio\treference\tnatural\na\tg.wav\t{LINES[0]}\tn.wav\n"
                                    f"b\tg.wav\t{LINES[1]}\t\n")
    a, b = manifests.read(tmp_path / "m.tsv")
    assert a.natural == str(tmp_path / "n.wav") and b.natural == ""
    (tmp_path / "m.jsonl").write_text(json.dumps({"audio_filepath": "g.wav", "text": LINES[0], "natural": "n.wav"})
                                      + "\n")
    (row,) = manifests.read(tmp_path / "m.jsonl")
    assert row.natural == str(tmp_path / "n.wav")
    (tmp_path / "out").mkdir()
    sf.write(tmp_path / "out" / "u1.wav", np.zeros(1600, np.float32), 16000)
    (tmp_path / "meta.lst").write_text(f"u1|prompt text|p.wav|{LINES[0]}|n.wav\n")
    (row,) = manifests.read(tmp_path / "meta.lst", audio_dir=str(tmp_path / "out"))
    assert (row.natural, row.speaker_reference) == (str(tmp_path / "n.wav"), str(tmp_path / "p.wav"))


def ljspeech(folder: Path, spoken: dict, natural: str, systems: dict[str, str]) -> None:
    """An LJSpeech folder of one voice's lines, and each system's folder of <id>.wav."""
    (folder / "LJ" / "wavs").mkdir(parents=True)
    meta = []
    for i, line in enumerate(LINES[:2]):
        uid = f"LJ001-{i:04d}"
        meta.append(f"{uid}|{line}|{line}")
        (folder / "LJ" / "wavs" / f"{uid}.wav").write_bytes(spoken[natural][i].read_bytes())
        for system, voice in systems.items():
            (folder / system).mkdir(exist_ok=True)
            (folder / system / f"{uid}.wav").write_bytes(spoken[voice][i].read_bytes())
    (folder / "LJ" / "metadata.csv").write_text("\n".join(meta) + "\n")


@pytest.mark.slow
def test_a_run_measures_each_system_against_the_corpus_own_recordings(tmp_path, models_dir, spoken):
    """An LJSpeech folder and two systems' wavs of its lines: each row's mcd equals pymcd's on the corpus's own
    wav; a TSV row without a natural recording gets an empty value and a note, and its WER stands."""
    ljspeech(tmp_path, spoken, "piper:joe", {"esp": "espeak:en-us", "fl": "flite:slt"})
    (tmp_path / "esp" / "stray.wav").write_bytes(spoken["flite:slt"][2].read_bytes())
    proc = cli(tmp_path, "--audio-manifest", "LJ", "--audio-dir", "esp=esp,fl=fl", "--run", "lj", *TINY,
               "--measures", "mcd,f0_rmse", models=models_dir)
    assert "stray.wav" in proc.stderr  # a wav no line names is said, not scored
    run = tmp_path / "results" / "lj"
    rows = {(r["voice"], r["sentence_id"]): r for r in store.read_csv(run / "utterances.csv")}
    assert len(rows) == 4
    theirs = pymcd()
    for (system, uid), row in rows.items():
        expected = theirs.calculate_mcd(str(tmp_path / "LJ" / "wavs" / f"{uid}.wav"), str(tmp_path / system / f"{uid}.wav"))
        assert float(row["mcd"]) == pytest.approx(expected, abs=5e-5)
        assert float(row["f0_rmse"]) > 0 and 0 <= float(row["vuv_error"]) <= 1 and row["wer"] != ""
    measured = store.read_csv(run / "measures.csv")
    assert {Path(r["natural"]).parent.name for r in measured} == {"wavs"}
    # the gate and the statistics read the measure's direction: lower is better
    declared = store.read_json(run / "measures.json")
    assert declared["mcd"]["better"] == {"mcd": "lower"} and set(declared["f0_rmse"]["better"]) == {"f0_rmse",
                                                                                                 "vuv_error"}
    # a rerun computes nothing; a changed natural recording computes the measures again, and no transcript
    again = cli(tmp_path, "--audio-manifest", "LJ", "--audio-dir", "esp=esp,fl=fl", "--run", "lj", *TINY,
                "--measures", "mcd,f0_rmse", models=models_dir)
    assert "assess: up to date" in again.stderr
    (tmp_path / "LJ" / "wavs" / "LJ001-0000.wav").write_bytes(spoken["flite:slt"][0].read_bytes())
    changed = cli(tmp_path, "--audio-manifest", "LJ", "--audio-dir", "esp=esp,fl=fl", "--run", "lj", *TINY,
                  "--measures", "mcd,f0_rmse", models=models_dir)
    assert "assess: running" in changed.stderr and "transcribe: up to date" in changed.stderr
    after = {(r["voice"], r["sentence_id"]): r for r in store.read_csv(run / "utterances.csv")}
    assert float(after["fl", "LJ001-0000"]["mcd"]) == 0.0  # now its own natural recording
    assert after["fl", "LJ001-0001"]["mcd"] == rows["fl", "LJ001-0001"]["mcd"]
    # a table whose second row has no natural recording
    (tmp_path / "m.tsv").write_text("id\taudio\treference\tnatural\n"
                                    f"a\tesp/LJ001-0000.wav\t{LINES[0]}\tLJ/wavs/LJ001-0001.wav\n"
                                    f"b\tesp/LJ001-0001.wav\t{LINES[1]}\t\n")
    cli(tmp_path, "--audio-manifest", "m.tsv", "--run", "tsv", *TINY, "--measures", "mcd", models=models_dir)
    rows = {r["sentence_id"]: r for r in store.read_csv(tmp_path / "results" / "tsv" / "utterances.csv")}
    assert rows["a"]["mcd"] != "" and rows["b"]["mcd"] == "" and rows["b"]["wer"] != ""
    notes = {r["sentence_id"]: r["notes"] for r in store.read_csv(tmp_path / "results" / "tsv" / "measures.csv")}
    assert "no natural recording" in notes["b"] and notes["a"] == ""


def test_a_measure_written_for_the_one_reference_interface_is_refused_before_any_work_naming_the_fix():
    from pipeline.core.source import Source
    from pipeline.errors import ModelUnloadable
    from pipeline.measures.assessor import Assessor

    class Old:
        def score(self, audio, reference):
            return base.Scores({"x": 1.0})

    class New:
        def score(self, audio, natural, text=""):
            return base.Scores({"x": 1.0})

    source = Source(spec="old:none", found="package", path="", files=())
    for name, load, needs in (("old_interface", lambda s: Old(), ()), ("new_interface", lambda s: New(), ("natural",))):
        base.MEASURES.register(base.Declaration(name=name, columns={"x": "x"}, source=lambda: source, load=load,
                                                needs=needs))
    try:
        old = Assessor("old_interface", source, 1)
        assert isinstance(old.failed, ModelUnloadable) and "'reference'" in str(old.failed)
        assert "speaker_reference" in str(old.failed)
        assert Assessor("new_interface", source, 1).failed is None  # a declared need, and one with a default
    finally:
        for name in ("old_interface", "new_interface"):
            base.MEASURES._declared.pop(name)
