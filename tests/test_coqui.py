"""Coqui's real loading path (`TTS(model_path=..., config_path=...)`) on a tiny random VITS built here.
No Coqui weights can be had offline, so the voice speaks noise: the test checks shape, rate and the call path."""
import numpy as np
import pytest

from pipeline.tts import base

pytestmark = pytest.mark.slow  # real models and pipeline runs: left out of `pytest -m "not slow"`



@pytest.fixture(scope="module")
def tiny_vits(tmp_path_factory):
    from pipeline.tts.coqui import install_standins

    install_standins()
    pytest.importorskip("TTS.api", reason="needs the coqui extra (scripts/setup --test)")
    import torch
    from TTS.tts.configs.shared_configs import CharactersConfig
    from TTS.tts.configs.vits_config import VitsConfig
    from TTS.tts.models.vits import Vits, VitsArgs

    torch.manual_seed(0)
    cfg = VitsConfig()
    cfg.model_args = VitsArgs(hidden_channels=16, hidden_channels_ffn_text_encoder=32, num_heads_text_encoder=2,
                              num_layers_text_encoder=1, num_layers_flow=1, num_layers_posterior_encoder=1,
                              upsample_rates_decoder=[8, 8, 2, 2], upsample_initial_channel_decoder=32,
                              resblock_kernel_sizes_decoder=[3], resblock_dilation_sizes_decoder=[[1, 3, 5]],
                              init_discriminator=False)
    cfg.use_phonemes = False
    cfg.text_cleaner = "english_cleaners"
    cfg.characters = CharactersConfig(characters="abcdefghijklmnopqrstuvwxyz", punctuations="!,.? ", pad="<PAD>",
                                      eos="<EOS>", bos="<BOS>", blank="<BLNK>",
                                      characters_class="TTS.tts.utils.text.characters.Graphemes")
    cfg.audio.sample_rate = 16000
    model = Vits(cfg)
    out = tmp_path_factory.mktemp("vits")
    torch.save({"model": model.state_dict()}, out / "model.pth")
    cfg.save_json(str(out / "config.json"))
    return out


def test_tiny_vits_loads_through_coqui_and_speaks(tiny_vits):
    voice = base.load(f"coqui:{tiny_vits}")
    audio, sr = voice.synthesize("To be, or not to be.")
    assert sr == 16000 and audio.dtype == np.float32 and audio.ndim == 1
    assert len(audio) > 0.1 * sr and np.abs(audio).max() <= 1.0
    again, _ = voice.synthesize("To be, or not to be.")
    assert np.array_equal(audio, again)  # seeded: deterministic
    longer, _ = voice.synthesize(" ".join(["to be or not to be that is the question"] * 20))  # three chunks
    assert len(longer) > 2 * len(audio)
    assert base.resolve(f"coqui:{tiny_vits}").files == (str(tiny_vits / "model.pth"), str(tiny_vits / "config.json"))


def test_model_file_path_form_and_missing_models(tiny_vits, tmp_path, monkeypatch):
    from pipeline.core.source import ModelDamaged, ModelMissing

    voice = base.load(f"coqui:{tiny_vits / 'model.pth'}")
    assert voice.sample_rate == 16000
    with pytest.raises(ModelDamaged, match="config.json"):
        base.load(f"coqui:{tmp_path}")
    monkeypatch.delenv("TTS_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no network: Coqui's manager is not asked
    with pytest.raises(ModelMissing, match=r"(?s)Coqui cache .*tts_models--en--nowhere--vits.*tts --model_name"):
        base.load("coqui:tts_models/en/nowhere/vits")


def test_empty_text_is_refused(tiny_vits):
    with pytest.raises(base.UnspeakableText):
        base.load(f"coqui:{tiny_vits}").synthesize("  ...  ")
