import numpy as np
import pytest

from pipeline.asr import base, weights
from pipeline.scoring.align import align_text
from pipeline.scoring.normalize import get


def wer(ref: str, hyp: str) -> float:
    n = get("basic")
    return align_text(n(ref), n(hyp)).wer


@pytest.mark.slow
@pytest.mark.parametrize("model", ["tiny.en", "base"])
def test_converted_openai_whisper_equals_faster_whisper_float32(models_dir, piper_speech, model):
    texts, speech = piper_speech
    opts = base.ASRConfig(compute_type="float32")
    fw = [d.text for d in base.load(f"faster-whisper:{model}", opts, str(models_dir)).transcribe(speech)]
    ow = [d.text for d in base.load(f"openai-whisper:{model}", opts, str(models_dir)).transcribe(speech)]
    assert fw == ow
    # real recognition, not just agreement: the quotes come back nearly word for word
    assert wer(texts[1], fw[1]) <= 0.2 and wer(texts[2], fw[2]) <= 0.2


def test_conversion_is_cached_and_hash_checked(models_dir):
    tiny = weights.ct2_dir("tiny.en", models_dir)
    path = weights.openai_checkpoint(tiny, models_dir)
    stamp = path.stat().st_mtime_ns
    assert weights.openai_checkpoint(tiny, models_dir).stat().st_mtime_ns == stamp
    path.write_bytes(path.read_bytes()[:-10])  # a torn or tampered file is converted again
    assert weights.openai_checkpoint(tiny, models_dir).stat().st_mtime_ns != stamp
    assert path != weights.openai_checkpoint(weights.ct2_dir("base", models_dir), models_dir)
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
    r = base.load("faster-whisper:tiny.en", base.ASRConfig(), str(models_dir))
    (decoded,) = r.transcribe([long])
    text = decoded.text
    assert decoded.mode == "long-form"
    assert text.lower().count("question") >= 5 and "tomorrow" in text.lower()


def test_unknown_engine_lists_the_available_ones():
    from pipeline.errors import ConfigError

    with pytest.raises(ConfigError, match="faster-whisper:…"):
        base.ENGINES.check("fast-whisper:base")


def test_the_trimmed_window_follows_the_utterances_own_length():
    from pipeline.asr.faster_whisper_trim import window_samples

    sr = 16000
    assert window_samples(2 * sr) == 10 * sr  # at least 10 s
    assert window_samples(int(7.5 * sr)) == 12 * sr  # whole seconds, 4 s past the speech
    assert window_samples(27 * sr) == 30 * sr  # never past Whisper's own window


def test_a_looping_transcript_is_told_from_a_line():
    from pipeline.asr.faster_whisper_trim import looks_like_a_loop

    line = "I would my father look but with my eyes."
    assert looks_like_a_loop(" ".join([line] * 12))
    assert not looks_like_a_loop(line) and not looks_like_a_loop("")


def test_trimmed_window_recognises_speech_and_falls_back_to_the_full_window(models_dir, piper_speech, monkeypatch):
    from pipeline.asr import faster_whisper_trim

    texts, speech = piper_speech
    opts = base.ASRConfig(threads=1)
    trimmed = [d.text for d in base.load("faster-whisper-trim:tiny.en", opts, str(models_dir)).transcribe(speech)]
    assert all(wer(ref, hyp) <= 0.25 for ref, hyp in zip(texts, trimmed)), trimmed
    full = [d.text for d in base.load("faster-whisper:tiny.en", opts, str(models_dir)).transcribe(speech)]
    monkeypatch.setattr(faster_whisper_trim, "looks_like_a_loop", lambda text: True)
    again = base.load("faster-whisper-trim:tiny.en", opts, str(models_dir))
    assert again.name == "faster-whisper-trim:tiny.en"
    assert [d.text for d in again.transcribe(speech)] == full  # every "loop" decoded again in 30 s


@pytest.mark.slow
def test_bfloat16_runs_openai_whisper_under_bf16_autocast(models_dir, piper_speech, caplog):
    """Correct on any CPU; fast only on one with native bf16 (bench/asr_speed.py measures it there), and where it
    is slow the user is told why."""
    from pipeline.exec import device

    texts, speech = piper_speech
    opts = base.ASRConfig(threads=1, compute_type="bfloat16")
    with caplog.at_level("WARNING"):
        r = base.load("openai-whisper:tiny.en", opts, str(models_dir))
    text = r.transcribe([speech[1]])[0].text
    assert wer(texts[1], text) <= 0.2, text
    rates = device.measured_peaks(str(models_dir))  # what this machine measured, as the engine read it
    warned = [m for m in caplog.messages if "no native bf16" in m]
    assert len(warned) == (rates["bf16_gflops"] < rates["fp32_gflops"]), caplog.messages
    if warned:
        assert "openai-whisper:tiny.en" in warned[0] and "float32" in warned[0]


def test_bf16_weights_are_cast_once_and_give_whispers_logits_to_the_bit():
    """Under inference_mode, bf16 autocast caches no weight cast: whisper's own modules cast every weight at every
    decoding step. With bf16_weights no weight is cast while decoding, and the logits are those of whisper's own
    explicit attention (disable_sdpa) to the bit, with and without the key-value cache, over steps that reuse
    the cross-attention's prepared keys; a second decode's audio gets its own. Packed weights, where oneDNN runs
    bf16, give the same products up to the order of their sums (to the bit on a CPU with AVX-512 bf16, but that
    is its kernels' choice, not a guarantee)."""
    import copy

    import torch
    import whisper
    from torch.profiler import profile

    from pipeline.asr.openai_whisper import bf16_weights

    torch.manual_seed(0)
    dims = whisper.model.ModelDimensions(n_mels=80, n_audio_ctx=16, n_audio_state=64, n_audio_head=4,
                                         n_audio_layer=1, n_vocab=1000, n_text_ctx=16, n_text_state=64,
                                         n_text_head=4, n_text_layer=2)
    theirs = whisper.model.Whisper(dims).eval()
    theirs.decoder.positional_embedding.data.normal_()  # left uninitialised by whisper: a checkpoint fills it
    ours, packed = copy.deepcopy(theirs), copy.deepcopy(theirs)
    bf16_weights(ours, packed=False)
    vocab = theirs.decoder.token_embedding.weight
    weights = {tuple(p.shape) for p in theirs.decoder.parameters()} | {tuple(vocab.t().shape)}  # the unembedding
    prompt, steps = torch.tensor([[1, 2, 3], [4, 5, 6]]), [torch.tensor([[7], [8]]), torch.tensor([[9], [10]])]
    audio = [torch.randn(2, 16, 64), torch.randn(2, 16, 64)]

    def decode(model) -> tuple[list[torch.Tensor], int]:
        logits = []
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16), profile(record_shapes=True) as p:
            for xa in audio:
                cache, hooks = model.install_kv_cache_hooks()
                logits += [model.decoder(tokens, xa, kv_cache=cache) for tokens in [prompt, *steps]]
                for h in hooks:
                    h.remove()
        return logits, sum(e.name == "aten::_to_copy" and tuple(e.input_shapes[0]) in weights for e in p.events())

    with whisper.model.disable_sdpa():
        expected, their_casts = decode(theirs)
    got, our_casts = decode(ours)
    assert all(torch.equal(a, b) for a, b in zip(got, expected))
    assert not torch.equal(got[0], got[3])  # the second audio was attended to, not the first one's keys
    assert got[1].dtype == torch.float32 and got[1].shape == (2, 1, 1000)
    assert their_casts > 2 * len(theirs.decoder.blocks) and our_casts == 0
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert ours.encoder(torch.zeros(1, 80, 32)).dtype == torch.float32  # what whisper.decode checks
    if torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported():
        bf16_weights(packed, packed=True)
        for a, b in zip(decode(packed)[0], expected):
            torch.testing.assert_close(a, b, rtol=0.02, atol=0.02)


def test_whisper_decode_runs_bf16_weights_decoder_as_it_runs_whispers_own():
    """bf16_weights' decoder (one TorchScript call a step) under whisper.decode, greedy and in a beam search (which
    reorders the self-attention's cached keys between steps), and without a cache (model.logits, as language
    detection calls it): the tokens, log-probabilities and logits of whisper's own modules under bf16 autocast,
    attending as under disable_sdpa, to the bit."""
    import copy

    import torch
    import whisper

    from pipeline.asr.openai_whisper import bf16_weights

    torch.manual_seed(0)
    dims = whisper.model.ModelDimensions(n_mels=80, n_audio_ctx=16, n_audio_state=64, n_audio_head=4,
                                         n_audio_layer=1, n_vocab=51864, n_text_ctx=16, n_text_state=64,
                                         n_text_head=4, n_text_layer=2)
    theirs = whisper.model.Whisper(dims).eval()
    theirs.decoder.positional_embedding.data.normal_()
    ours = copy.deepcopy(theirs)
    bf16_weights(ours, packed=False)
    features = torch.randn(1, 16, 64)
    for beam_size in (None, 3):
        options = whisper.DecodingOptions(language="en", without_timestamps=True, fp16=False, beam_size=beam_size)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            with whisper.model.disable_sdpa():
                expected, = whisper.decode(theirs, features, options)
            got, = whisper.decode(ours, features, options)
        assert len(got.tokens) > 1 and (got.tokens, got.avg_logprob) == (expected.tokens, expected.avg_logprob)
    prompt = torch.tensor([[50257, 50362]])
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        with whisper.model.disable_sdpa():
            expected = theirs.logits(prompt, features)
        assert torch.equal(ours.logits(prompt, features), expected)


def test_the_bf16_encoder_attends_as_whispers_explicit_path_a_head_at_a_time():
    """bf16_weights gives the encoder whisper's explicit attention (disable_sdpa), a head at a time, its softmax
    widened to fp32 and rounded to bf16 in place: the same scores and probabilities but for one on a rounding tie,
    so every head's output agrees with whisper's to bf16's rounding, and the encoder's with it."""
    import copy

    import torch
    import whisper
    from torch.profiler import profile

    from pipeline.asr.openai_whisper import bf16_weights, encoder_attention

    torch.manual_seed(0)
    dims = whisper.model.ModelDimensions(n_mels=80, n_audio_ctx=23, n_audio_state=64, n_audio_head=4,
                                         n_audio_layer=2, n_vocab=1000, n_text_ctx=16, n_text_state=64,
                                         n_text_head=4, n_text_layer=1)
    theirs = whisper.model.Whisper(dims).eval()
    ours = copy.deepcopy(theirs)
    bf16_weights(ours, packed=False)
    q, k, v = (torch.randn(2, 23, 64).to(torch.bfloat16) * 3 for _ in range(3))
    attention = copy.deepcopy(theirs.encoder.blocks[0].attn)
    with whisper.model.disable_sdpa():
        expected, _ = attention.qkv_attention(q, k, v)
    encoder_attention(attention)
    got, _ = attention.qkv_attention(q, k, v)
    assert got.dtype == torch.bfloat16 and got.shape == expected.shape
    torch.testing.assert_close(got, expected, rtol=2 ** -7, atol=2 ** -7)
    mel = torch.randn(1, 80, 46)
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        with whisper.model.disable_sdpa():
            their_features = theirs.encoder(mel).float()
        with profile() as p:
            our_features = ours.encoder(mel)
    torch.testing.assert_close(our_features, their_features, rtol=0.02, atol=0.02)
    assert not [e.name for e in p.events() if "scaled_dot_product" in e.name]


def test_a_compute_type_this_cpu_cannot_run_says_which_it_can(models_dir):
    import ctranslate2

    if "bfloat16" in ctranslate2.get_supported_compute_types("cpu"):
        pytest.skip("this CPU runs bfloat16")
    with pytest.raises(ValueError, match=r"--compute-type bfloat16 cannot run on this cpu .* it runs .*int8.*; "
                                         r"for bf16 on a CPU, use --asr openai-whisper:tiny.en"):
        base.load("faster-whisper:tiny.en", base.ASRConfig(compute_type="bfloat16"), str(models_dir))


def test_an_engines_changed_arithmetic_joins_its_transcripts_keys_and_only_there():
    """bf16 openai-whisper decodes attend as whisper's explicit path does since that replaced SDPA's kernel (and
    the encoder's softmax runs in place since then), and faster-whisper's features are made with numpy's BLAS on
    one thread since its thread count showed in transcripts: their revisions are in their transcripts' keys, and
    every other engine and type has none."""
    from dataclasses import replace

    from pipeline.asr.base import ENGINES
    from pipeline.config.run import Config
    from pipeline.stages.transcribe import transcript_keys

    for engine in ("openai-whisper:tiny.en", "faster-whisper:tiny.en"):
        for compute_type in ("int8", "float32", "bfloat16"):
            cfg = Config()
            cfg = replace(cfg, asr=replace(cfg.asr, compute_type=compute_type))
            revision = ENGINES.revision(engine, cfg.asr)
            assert bool(revision) == (engine.startswith("faster-whisper") or compute_type == "bfloat16")
    # what a transcript's key must change with, and what it must not
    cfg = Config()
    key = transcript_keys(cfg, "faster-whisper:tiny.en", ["cd34"])("ab12")
    changed = {
        "the audio": transcript_keys(cfg, "faster-whisper:tiny.en", ["cd34"])("ab13"),
        "the engine": transcript_keys(cfg, "openai-whisper:tiny.en", ["cd34"])("ab12"),
        "the model's files": transcript_keys(cfg, "faster-whisper:tiny.en", ["cd35"])("ab12"),
        "the device": transcript_keys(replace(cfg, device="cuda"), "faster-whisper:tiny.en", ["cd34"])("ab12"),
        **{f"asr.{name}": transcript_keys(replace(cfg, asr=replace(cfg.asr, **{name: value})), "faster-whisper:tiny.en",
                                          ["cd34"])("ab12")
           for name, value in (("beam_size", 5), ("temperature", 0.2), ("language", "de"), ("compute_type", "float32"),
                               ("condition_on_previous_text", True))},
    }
    assert all(k != key for k in changed.values()), [what for what, k in changed.items() if k == key]
    assert len(set(changed.values())) == len(changed)
    for name, value in (("batch_size", 1), ("threads", 1), ("engines", ["pocketsphinx:en-us"])):  # speed, not text
        assert transcript_keys(replace(cfg, asr=replace(cfg.asr, **{name: value})), "faster-whisper:tiny.en",
                               ["cd34"])("ab12") == key, name
