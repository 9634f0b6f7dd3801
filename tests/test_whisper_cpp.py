"""whisper.cpp as an engine: our ggml writer against the format (a round trip, a file whisper.cpp loads, the
refusals), the engine on real speech, and its WER beside openai-whisper's on the same model."""
import struct

import numpy as np
import pytest

from pipeline.asr import _ggml, base, weights
from pipeline.core import store
from tests.helpers import SENTENCES, cli, write_sentences

# whisper.cpp's models/convert-pt-to-ggml.py keeps these in float32 besides every 1-D tensor (the biases and the
# LayerNorms' weights), and writes the rest as float16
WIDE = {"encoder.conv1.bias", "encoder.conv2.bias", "encoder.positional_embedding", "decoder.positional_embedding"}

pytestmark = pytest.mark.slow  # real models: left out of `pytest -m "not slow"`


@pytest.fixture(scope="module")
def checkpoint(models_dir):
    return weights.openai_checkpoint(weights.ct2_dir("tiny.en", models_dir), models_dir)


def test_the_ggml_file_reads_back_as_the_checkpoint_it_was_written_from(checkpoint, models_dir):
    import torch

    ckpt = torch.load(checkpoint, map_location="cpu", weights_only=True)
    path = _ggml.converted(checkpoint, models_dir)
    model = _ggml.decode(path.read_bytes(), path)
    assert model.dims == {k: ckpt["dims"][k] for k in _ggml.HPARAMS} and model.ftype == 1
    assert model.filters.shape == (80, 201) and len(model.tokens) == 50256 and model.tokens[0] == b"!"
    assert list(model.tensors) == list(ckpt["model_state_dict"])
    for name, value in ckpt["model_state_dict"].items():
        stored, source = model.tensors[name], value.float().numpy()
        if name in ("encoder.conv1.bias", "encoder.conv2.bias"):
            assert stored.shape == (len(source), 1) and stored.dtype == np.float32
            source = source.reshape(-1, 1)
        assert stored.dtype == (np.float32 if name in WIDE or name.endswith(".bias") or "_ln" in name or
                                ".ln" in name else np.float16), name
        assert np.array_equal(stored, source.astype(stored.dtype)), name
    assert _ggml.converted(checkpoint, models_dir) == path  # written once, reused by its hash


def test_the_engine_transcribes_real_speech_alone_in_its_window(models_dir, piper_speech):
    texts, speech = piper_speech
    engine = base.load("whisper-cpp:tiny.en", base.ASRConfig(threads=2), str(models_dir))
    out = engine.transcribe(speech)
    from pipeline.scoring import normalize
    from pipeline.scoring.align import align_text

    clean = normalize.get("basic")
    aligned = [align_text(clean(reference), clean(d.text)) for d, reference in zip(out, texts)]
    assert all(d.mode == "window" for d in out)
    assert sum(a.errors for a in aligned) / sum(a.ref_words for a in aligned) <= 0.3, out  # tiny.en's own slips


def test_a_ggml_file_by_path_is_used_as_is_and_a_torn_or_foreign_one_is_refused(tmp_path, checkpoint, models_dir):
    good = _ggml.converted(checkpoint, models_dir)
    data = good.read_bytes()
    (tmp_path / "torn.bin").write_bytes(data[:len(data) // 3])
    (tmp_path / "page.bin").write_bytes(b"<!DOCTYPE html><html>Not Found</html>" * 4)
    (tmp_path / "other.bin").write_bytes(struct.pack("<i", _ggml.MAGIC) + struct.pack("<11i", 32000, *[8] * 10))
    write_sentences(tmp_path / "s.txt", SENTENCES[:1])
    for name, says in (("torn.bin", "cut short"), ("page.bin", "not a ggml file"), ("other.bin", "not of a Whisper")):
        proc = cli(tmp_path, "--sentences", "s.txt", "--asr", f"whisper-cpp:{tmp_path / name}", models=models_dir,
                   check=False)
        assert proc.returncode == 2 and says in proc.stderr and name in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
    proc = cli(tmp_path, "--sentences", "s.txt", "--asr", f"whisper-cpp:{good}", "--language", "de", models=models_dir,
               check=False)
    assert proc.returncode == 2 and "English-only" in proc.stderr  # the file's own vocabulary says so
    proc = cli(tmp_path, "--sentences", "s.txt", "--asr", "whisper-cpp:tiny.en", "--language", "de",
               models=models_dir, check=False)
    assert proc.returncode == 2 and "English-only" in proc.stderr
    cli(tmp_path, "--sentences", "s.txt", "--asr", f"whisper-cpp:{good}", "--measures", "none", models=models_dir)
    manifest = store.read_json(tmp_path / "results" / "default" / "manifest.json")
    assert manifest["models"][f"whisper-cpp:{good}"]["files"]  # the ggml file's hash joins the keys


def test_whisper_cpp_scores_inside_openai_whispers_interval_on_the_same_model(tmp_path, models_dir):
    write_sentences(tmp_path / "s.txt", SENTENCES)
    cli(tmp_path, "--sentences", "s.txt", "--voices", "piper:joe,flite:slt", "--asr",
        "openai-whisper:tiny.en,whisper-cpp:tiny.en", "--measures", "none", models=models_dir)
    summary = {(s["voice"], s["asr"]): s for s in store.read_csv(tmp_path / "results" / "default" / "summary.csv")}
    for voice in ("piper:joe", "flite:slt"):
        ours, theirs = summary[voice, "whisper-cpp:tiny.en"], summary[voice, "openai-whisper:tiny.en"]
        assert float(theirs["ci95_low"]) <= float(ours["micro_wer"]) <= float(theirs["ci95_high"]), (voice, ours, theirs)
