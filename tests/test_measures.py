"""Naturalness and speaker similarity beside WER: DNSMOS equals speechmos, speaker_sim equals Resemblyzer's own
computation, each utterance is measured alone, results are cached by what determines them, bad input gets an
empty value and a note, and a measure registered from outside (one file) reaches every CSV, summary, comparison
and the report."""
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from pipeline.core import store
from pipeline.io import audio, conditions
from pipeline.measures import base
from tests.helpers import OWN_CACHE, ROOT, TINY, write_sentences

LINES = ["Now is the winter of our discontent.", "To be, or not to be, that is the question.",
         "My lord, I will go with you to the king."]


@pytest.fixture(scope="module")
def voices_speech() -> dict[str, list[np.ndarray]]:
    """Three lines spoken by three voices of three families, at 16 kHz."""
    from pipeline.tts import base as tts

    out = {}
    for name in ("piper:joe", "flite:slt", "espeak:en-us"):
        voice = tts.load(name)
        out[name] = [audio.resample(*voice.synthesize(line)) for line in LINES]
    return out


def noisy(x: np.ndarray, snr: float) -> np.ndarray:
    return conditions.apply(conditions.parse(f"noise:snr={snr:g}"), x, audio.SAMPLE_RATE, 7)


@pytest.mark.slow
def test_dnsmos_equals_speechmos_clean_and_in_noise(voices_speech):
    import speechmos.dnsmos as reference

    from pipeline.measures import dnsmos

    ours = dnsmos.DNSMOS(dnsmos.source())
    bak = {"clean": [], "noise": []}
    for line, clips in enumerate(voices_speech.values()):  # each voice family its own line: three clips
        clean = clips[line]
        for kind, x in (("clean", clean), ("noise", noisy(clean, 0))):
            theirs = reference.run(x / np.abs(x).max(), sr=16000)  # VERSA's peak normalisation, then speechmos
            got = ours.score(x).values
            for column, key in (("dnsmos_sig", "sig_mos"), ("dnsmos_bak", "bak_mos"),
                                ("dnsmos_ovrl", "ovrl_mos"), ("dnsmos_p808", "p808_mos")):
                assert got[column] == pytest.approx(float(theirs[key]), abs=1e-4), (kind, column)
            bak[kind].append(got["dnsmos_bak"])
    assert np.mean(bak["noise"]) < np.mean(bak["clean"]) - 1  # 0 dB of noise: the background is rated far worse


def test_dnsmos_parts_and_filters_are_onnx_and_librosas_own_bytes():
    """DNSMOS cuts its model and makes its mel filters, and speaker_sim its mel spectrograms, without importing onnx
    or librosa's spectral modules (most of their loading time): the bytes are those onnx.helper serializes for the
    same nodes, and the floats those librosa gives."""
    import librosa
    import onnx
    from onnx import TensorProto, helper

    from pipeline.measures import _filters, _onnx_part, dnsmos

    primary = dnsmos.source().files[0]
    model = onnx.load(primary)

    def onnx_part(inputs, outputs) -> bytes:  # the nodes that make `outputs` from `inputs`, by onnx's own API
        made = {out: node for node in model.graph.node for out in node.output}
        keep, todo, seen = set(), list(outputs), set(inputs)
        while todo:
            name = todo.pop()
            if name not in seen and name in made:
                seen.add(name)
                keep.add(id(made[name]))
                todo.extend(made[name].input)
        nodes = [n for n in model.graph.node if id(n) in keep]
        used = {i for n in nodes for i in n.input}
        graph = helper.make_graph(nodes, "part", *([helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                                                    for n in names] for names in (inputs, outputs)),
                                  [t for t in model.graph.initializer if t.name in used])
        sub = helper.make_model(graph, opset_imports=model.opset_import)
        sub.ir_version = model.ir_version
        return sub.SerializeToString()

    data = Path(primary).read_bytes()
    for inputs, outputs in (([dnsmos.INTO_CONVS], [dnsmos.OUT_OF_CONVS]), ([dnsmos.OUT_OF_CONVS], ["Identity:0"])):
        ours = _onnx_part.part(data, inputs, outputs)
        assert ours == onnx_part(inputs, outputs) and len(onnx.load_from_string(ours).graph.node) > 2
    assert _filters.mel(16000, 321, 120).tobytes() == librosa.filters.mel(sr=16000, n_fft=321, n_mels=120).tobytes()
    assert _filters.hann(321).tobytes() == librosa.filters.get_window("hann", 321, fftbins=True).tobytes()
    for sr, n_fft, n_mels in ((22050, 1024, 80), (16000, 512, 40)):  # the scale's both parts, other shapes
        assert np.array_equal(_filters.mel(sr, n_fft, n_mels), librosa.filters.mel(sr=sr, n_fft=n_fft, n_mels=n_mels))
    rng = np.random.default_rng(0)
    for n in (300, 400, 16000 * 3 + 7, 16000 * 9):  # under one FFT, one, and several of librosa's STFT blocks
        y = (rng.standard_normal(n) * 0.1).astype(np.float32)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # librosa's warning that 300 samples are fewer than n_fft
            theirs = librosa.feature.melspectrogram(y=y, sr=16000, n_fft=400, hop_length=160, n_mels=40)
        assert _filters.melspectrogram(y, 16000, 400, 160, 40).tobytes() == theirs.tobytes()
    code = "import sys; import numpy as np; from pipeline.measures import dnsmos, speaker_sim; " \
           "dnsmos.DNSMOS(dnsmos.source()); s = speaker_sim.SpeakerSimilarity(speaker_sim.source()); " \
           "s.embed(np.sin(np.arange(48000, dtype=np.float32) / 9)); " \
           "print(sorted({'onnx', 'librosa.core', 'librosa.feature', 'numba', 'scipy.signal'} & set(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert loaded.stdout.strip() == "[]", loaded.stderr[-2000:]


def test_dnsmos_windows_are_speechmos_windows():
    """speechmos cuts window k at int((k + 9.01) * 16000) and skips those one sample short: from k = 7 on."""
    from pipeline.measures import dnsmos

    looped, starts = dnsmos.windows(np.ones(16000 * 30, dtype=np.float32))
    assert starts == list(range(7)) and len(looped) == 16000 * 30
    looped, starts = dnsmos.windows(np.ones(16000, dtype=np.float32))  # 1 s looped to 16 s: 7 windows
    assert len(looped) == 16000 * 16 and starts == list(range(7))


@pytest.mark.slow
def test_speaker_sim_equals_resemblyzers_own_and_tells_voices_apart(voices_speech):
    from resemblyzer import VoiceEncoder, preprocess_wav

    from pipeline.measures import speaker_sim

    ours = speaker_sim.SpeakerSimilarity(speaker_sim.source())
    encoder = VoiceEncoder("cpu", verbose=False)
    joe, slt = voices_speech["piper:joe"], voices_speech["flite:slt"]
    for x in (*joe, *slt):  # the embedding itself, to the bit
        assert ours.embed(x).tobytes() == encoder.embed_utterance(preprocess_wav(x, 16000)).tobytes()
    a, b = (encoder.embed_utterance(preprocess_wav(x, 16000)) for x in (joe[0], joe[1]))
    assert ours.score(joe[0], joe[1]).values["speaker_sim"] == pytest.approx(float(a @ b / np.linalg.norm(a) /
                                                                                    np.linalg.norm(b)), abs=1e-5)
    same = [ours.score(joe[i], joe[j]).values["speaker_sim"] for i in range(3) for j in range(3) if i != j]
    other = [ours.score(joe[i], slt[j]).values["speaker_sim"] for i in range(3) for j in range(3)]
    assert min(same) > max(other)


@pytest.mark.slow
def test_a_measure_depends_only_on_its_own_audio(voices_speech):
    """Batch size, order, neighbours and threads change no value."""
    from pipeline.measures.assessor import Assessor, Clip

    clips = [xs[line] for line, xs in enumerate(voices_speech.values())]  # three: one thread scores two in a row
    ref = voices_speech["piper:joe"][0]
    for name in ("dnsmos", "speaker_sim"):
        source = base.MEASURES.get(name).source()
        needs = {need: ref for need in base.MEASURES.get(name).needs}
        alone = [Assessor(name, source, 1).work([Clip(x, needs)])[0].scores.values for x in clips]
        together = Assessor(name, source, 2).work([Clip(x, needs) for x in clips])
        backwards = Assessor(name, source, 2).work([Clip(x, needs) for x in reversed(clips)])[::-1]
        assert [d.scores.values for d in together] == alone == [d.scores.values for d in backwards], name


def test_bad_audio_gets_an_empty_value_and_a_note():
    from pipeline.measures import dnsmos, speaker_sim

    d, s = dnsmos.DNSMOS(dnsmos.source()), speaker_sim.SpeakerSimilarity(speaker_sim.source())
    silent = np.zeros(16000, dtype=np.float32)
    for scores in (d.score(silent), s.score(silent, None)):
        assert all(v is None for v in scores.values.values()) and scores.notes
    blip = (0.3 * np.sin(np.arange(4000) / 5)).astype(np.float32)  # 0.25 s
    short = d.score(blip)
    assert all(v is not None for v in short.values.values()) and "loops" in short.notes[0]
    with pytest.raises(ValueError):
        base.Scores({"x": float("nan")})


MEASURE = textwrap.dedent('''
    """run_pipeline.py with one more measure, declared in this one file: the peak level of the audio, read through
    a "model" file that holds a gain (so that a changed model file shows in the keys)."""
    import json, sys
    sys.path.insert(0, {root!r})
    import numpy as np
    from pipeline.core.source import Source, read_json_file
    from pipeline.measures.base import MEASURES, Declaration, Scores

    MODEL = {model!r}

    def source():
        read_json_file("level", __import__("pathlib").Path(MODEL), "the level model")
        return Source(spec="level:gain", found="path", path=MODEL, files=(MODEL,))

    class Level:
        def __init__(self, source):
            self.gain = json.load(open(source.path))["gain"]
        def score(self, audio):
            peak = float(np.max(np.abs(audio)))
            return Scores({{"peak_db": round(self.gain + 20 * np.log10(peak), 4) if peak else None}})

    MEASURES.register(Declaration(name="level", columns={{"peak_db": "peak level, dB (a test's measure)"}},
                                  source=source, load=Level))
    from pipeline.cli import main
    sys.exit(main())
''')


def run_with_level(cwd: Path, models: Path, *args) -> subprocess.CompletedProcess:
    script = cwd / "with_level.py"
    script.write_text(MEASURE.format(root=str(ROOT), model=str(cwd / "level.json")))
    return subprocess.run([sys.executable, str(script), "--set", f"models_dir={models}", *OWN_CACHE, *args], cwd=cwd,
                          capture_output=True, text=True, env={**os.environ, "TQDM_DISABLE": "1"})


@pytest.mark.slow
def test_a_measure_in_one_file_reaches_every_table_and_the_report(tmp_path, models_dir):
    (tmp_path / "level.json").write_text('{"gain": 0}')
    write_sentences(tmp_path / "s.txt", LINES)
    args = ["--sentences", "s.txt", "--voices", "piper:joe,espeak:en-us", "--conditions", "clean,silence",
            "--measures", "default", *TINY]
    first = run_with_level(tmp_path, models_dir, *args)
    assert first.returncode == 0, first.stderr[-3000:]
    run = tmp_path / "results" / "default"
    utterances = store.read_csv(run / "utterances.csv")
    for column in ("peak_db", "dnsmos_ovrl", "speaker_sim"):
        assert column in utterances[0]
    spoken = [u for u in utterances if u["condition"] == "clean"]
    assert all(u["peak_db"] and u["dnsmos_ovrl"] for u in spoken)
    silent = [u for u in utterances if u["condition"] == "silence"]
    assert all(u["peak_db"] == "" and u["dnsmos_ovrl"] == "" for u in silent)  # empty, never NaN
    notes = {r["condition"]: r["notes"] for r in store.read_csv(run / "measures.csv")}
    assert "silent" in notes["silence"]
    summary = store.read_csv(run / "measure_summary.csv")
    assert {"peak_db", "dnsmos_bak", "dnsmos_ovrl"} <= {s["measure"] for s in summary}
    compared = store.read_csv(run / "measure_comparisons.csv")
    assert any(c["measure"] == "peak_db" and c["differs"] == "voice" for c in compared)
    for c in compared:  # the verdict rests on the exact test, whose floor is 2/2ⁿ
        assert float(c["exact_p"]) >= min(1.0, 2 * 0.5 ** int(c["sentences"])) - 1e-9
        assert float(c["exact_p_holm"]) >= float(c["exact_p"])
    voices = store.read_csv(run / "voices.csv")
    assert any(v["voice_a"] == v["voice_b"] == "piper:joe" and v["condition"] == "clean" for v in voices)
    page = (run / "report.html").read_text()
    assert "Naturalness and voice" in page and "peak_db" in page and "peak level, dB" in page
    # a rerun computes nothing again; a changed model file computes the measure again, and nothing else
    again = run_with_level(tmp_path, models_dir, *args)
    assert "assess: up to date" in again.stderr
    (tmp_path / "level.json").write_text('{"gain": 6}')
    changed = run_with_level(tmp_path, models_dir, *args)
    assert "assess: running" in changed.stderr and "transcribe: up to date" in changed.stderr
    results = store.read_json(run / "manifest.json")["stage_results"]["assess"]
    assert results["reused"] == len(base.MEASURES.default()) * 2 * 3 * 2  # the default measures came from their
    # cache, level did not
    after = {(u["voice"], u["condition"], u["sentence_id"]): u for u in store.read_csv(run / "utterances.csv")}
    for u in spoken:
        key = (u["voice"], u["condition"], u["sentence_id"])
        assert float(after[key]["peak_db"]) == pytest.approx(float(u["peak_db"]) + 6)
        assert after[key]["wer"] == u["wer"] and after[key]["hypothesis"] == u["hypothesis"]  # a measure never
        # changes a transcript


@pytest.mark.slow
def test_speaker_references_per_row_and_per_voice_and_their_faults(tmp_path, models_dir, voices_speech):
    import soundfile as sf

    joe, slt = voices_speech["piper:joe"], voices_speech["flite:slt"]
    for i, x in enumerate(joe):
        sf.write(tmp_path / f"joe{i}.wav", x, 16000)
    sf.write(tmp_path / "slt.wav", slt[0], 16000)
    (tmp_path / "prompts").mkdir()
    sf.write(tmp_path / "prompts" / "joe_prompt.wav", joe[2], 16000)
    (tmp_path / "m.tsv").write_text("id\taudio\treference\tspeaker_reference\n"
                                    f"a\tjoe0.wav\t{LINES[0]}\tprompts/joe_prompt.wav\n"
                                    f"b\tjoe1.wav\t{LINES[1]}\tslt.wav\n"
                                    f"c\tjoe2.wav\t{LINES[2]}\tprompts/missing.wav\n")
    proc = run_with_level(tmp_path, models_dir, "--audio-manifest", "m.tsv", *TINY, "--measures", "speaker_sim")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["sentence_id"]: r for r in store.read_csv(tmp_path / "results" / "default" / "utterances.csv")}
    assert float(rows["a"]["speaker_sim"]) > float(rows["b"]["speaker_sim"])  # the same voice scores higher
    assert rows["c"]["speaker_sim"] == "" and rows["c"]["wer"] != ""  # its WER stands
    notes = {r["sentence_id"]: r["notes"] for r in store.read_csv(tmp_path / "results" / "default" / "measures.csv")}
    assert "missing.wav" in notes["c"]
    # per voice, from the config
    write_sentences(tmp_path / "s.txt", LINES[:2])
    proc = run_with_level(tmp_path, models_dir, "--run", "cfg", "--sentences", "s.txt", *TINY, "--measures",
                          "speaker_sim", "--set", f"assess.speaker_references=piper:joe={tmp_path / 'joe0.wav'}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    sims = [float(r["speaker_sim"]) for r in store.read_csv(tmp_path / "results" / "cfg" / "utterances.csv")]
    assert len(sims) == 2 and min(sims) > 0.8


@pytest.mark.slow
@pytest.mark.parametrize("case", ["typo", "damaged model"])
def test_a_measure_that_cannot_load_is_exit_2_before_any_work(tmp_path, models_dir, case):
    write_sentences(tmp_path / "s.txt", LINES[:1])
    (tmp_path / "level.json").write_text('{"gain": 0' if case == "damaged model" else '{"gain": 0}')
    measures = "dnsmoss" if case == "typo" else "level"
    proc = run_with_level(tmp_path, models_dir, "--sentences", "s.txt", *TINY, "--measures", measures)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert ("did you mean dnsmos" if case == "typo" else "level.json") in proc.stderr
    assert not (tmp_path / "audio").exists()
