import numpy as np
import pytest

from pipeline.asr import base, weights
from pipeline.scoring.align import align_text
from pipeline.scoring.normalize import get


def wer(ref: str, hyp: str) -> float:
    n = get("basic")
    return align_text(n(ref), n(hyp)).wer


@pytest.mark.parametrize("model", ["tiny.en", "base"])
def test_converted_openai_whisper_equals_faster_whisper_float32(models_dir, piper_speech, model):
    texts, speech = piper_speech
    opts = base.Options(compute_type="float32", models_dir=str(models_dir), pack=False)
    fw = [t for t, _ in base.load(f"faster-whisper:{model}", opts).transcribe(speech)]
    ow = [t for t, _ in base.load(f"openai-whisper:{model}", opts).transcribe(speech)]
    assert fw == ow
    # real recognition, not just agreement: the quotes come back nearly word for word
    assert wer(texts[1], fw[1]) <= 0.2 and wer(texts[2], fw[2]) <= 0.2


def test_conversion_is_cached_and_hash_checked(models_dir):
    path = weights.openai_checkpoint("tiny.en", models_dir)
    stamp = path.stat().st_mtime_ns
    assert weights.openai_checkpoint("tiny.en", models_dir).stat().st_mtime_ns == stamp
    path.write_bytes(path.read_bytes()[:-10])  # a torn or tampered file is converted again
    assert weights.openai_checkpoint("tiny.en", models_dir).stat().st_mtime_ns != stamp
    import torch
    ckpt = torch.load(path, weights_only=True)
    assert ckpt["dims"]["n_text_layer"] == 4 and ckpt["dims"]["n_vocab"] == 51864


def test_ct2_reader_sees_fused_qkv_and_zero_key_bias(models_dir):
    variables, aliases = weights.read_ct2(weights.ct2_dir("tiny.en", models_dir) / "model.bin")
    qkv = variables["encoder/layer_0/self_attention/linear_0/bias"]
    assert qkv.shape == (3 * 384,)
    assert not np.any(qkv[384:768])
    assert aliases == {"decoder/projection/weight": "decoder/embeddings/weight"}


def test_audio_longer_than_thirty_seconds_is_transcribed_in_full(models_dir, piper_speech):
    texts, speech = piper_speech
    gap = np.zeros(16000 * 4, dtype=np.float32)
    long = np.concatenate([speech[1], gap] * 6 + [speech[2]])  # ~45 s
    assert len(long) > 30 * 16000
    r = base.load("faster-whisper:tiny.en", base.Options(models_dir=str(models_dir)))
    (text, details), = r.transcribe([long])
    assert details["mode"] == "long-form"
    assert text.lower().count("question") >= 5 and "tomorrow" in text.lower()


def test_batched_and_single_decoding_agree(models_dir, piper_speech):
    _, speech = piper_speech
    r = base.load("faster-whisper:tiny.en", base.Options(models_dir=str(models_dir), pack=False))
    batched = [t for t, _ in r.transcribe(speech)]
    single = [r.transcribe([s])[0][0] for s in speech]
    assert batched == single


def test_unknown_engine_lists_the_available_ones():
    from pipeline.config import ConfigError
    with pytest.raises(ConfigError, match="faster-whisper:tiny.en"):
        base.check_name("faster-whisper:large-v3")


def test_packing_groups_utterances_into_windows_and_assigns_segments_back():
    sizes = [16000 * s for s in (3, 4, 10, 12, 2, 29)]
    assert base.pack(sizes) == [[0, 1, 2], [3, 4], [5]]  # 3+1.5+4+1.5+10 = 20 s; 20+1.5+12 > 29
    audio, starts = base.window_audio([np.ones(16000, np.float32), np.ones(8000, np.float32)])
    assert starts == [0.0, 2.5] and len(audio) == 16000 + 24000 + 8000
    segments = [(0.0, 0.9, " first"), (0.9, 1.2, " part"), (2.4, 3.0, " second")]
    assert base.assign(segments, starts) == ["first part", "second"]
    assert base.assign([(0.0, 1.0, "only one")], [0.0, 2.5]) == ["only one", ""]


def test_packed_decoding_matches_the_words_of_unpacked_decoding(models_dir, piper_speech):
    texts, speech = piper_speech
    packed = base.load("faster-whisper:base", base.Options(models_dir=str(models_dir), pack=True))
    single = base.load("faster-whisper:base", base.Options(models_dir=str(models_dir), pack=False))
    out_packed = packed.transcribe(speech)
    out_single = single.transcribe(speech)
    assert {d["mode"] for _, d in out_packed} <= {"packed", "packed-retry"}
    assert out_packed[0][1]["batch"] == 3  # all three shared one window
    for ref, (p, _), (s, _) in zip(texts, out_packed, out_single):
        assert abs(wer(ref, p) - wer(ref, s)) <= 0.15
        assert wer(ref, p) <= 0.35
