"""The FunASR engine (`funasr:paraformer-zh`, seed-tts-eval's test-zh ASR). Its weights come from a hub, so the
test builds a paraformer with FunASR's own code from a small config made here (random weights, its real
frontend, encoder, predictor and decoder) and saves it as FunASR saves a model folder: the loading and decoding
paths run for real, and what the random model writes is checked for being the same however it is asked."""
import json
import os

import numpy as np
import pytest
import soundfile as sf

from pipeline.core import store
from tests.helpers import cli

pytestmark = pytest.mark.slow

TOKENS = ["<blank>", "<s>", "</s>", *dict.fromkeys("今天天气很好我们去公园散步吧北京是中国的首都"), "<unk>"]
CONFIG = {
    "model": "Paraformer",
    "model_conf": {"ctc_weight": 0.0, "lsm_weight": 0.1, "length_normalized_loss": True, "predictor_weight": 1.0,
                   "predictor_bias": 1, "sampling_ratio": 0.75},
    "encoder": "SANMEncoder",
    "encoder_conf": {"output_size": 32, "attention_heads": 2, "linear_units": 64, "num_blocks": 2,
                     "dropout_rate": 0.0, "positional_dropout_rate": 0.0, "attention_dropout_rate": 0.0,
                     "input_layer": "pe", "pos_enc_class": "SinusoidalPositionEncoder", "normalize_before": True,
                     "kernel_size": 11, "sanm_shfit": 0, "selfattention_layer_type": "sanm"},
    "decoder": "ParaformerSANMDecoder",
    "decoder_conf": {"attention_heads": 2, "linear_units": 64, "num_blocks": 2, "dropout_rate": 0.0,
                     "positional_dropout_rate": 0.0, "self_attention_dropout_rate": 0.0,
                     "src_attention_dropout_rate": 0.0, "att_layer_num": 2, "kernel_size": 11, "sanm_shfit": 0},
    "predictor": "CifPredictorV2",
    "predictor_conf": {"idim": 32, "threshold": 1.0, "l_order": 1, "r_order": 1, "tail_threshold": 0.45},
    "frontend": "WavFrontend",
    "frontend_conf": {"fs": 16000, "window": "hamming", "n_mels": 80, "frame_length": 25, "frame_shift": 10,
                      "lfr_m": 7, "lfr_n": 6},
    "tokenizer": "CharTokenizer",
    "tokenizer_conf": {"unk_symbol": "<unk>"},
}


def paraformer(folder):
    """A FunASR model folder as FunASR exports one (config.yaml, model.pt, am.mvn, tokens.json), its model built
    by FunASR's registry from CONFIG."""
    import torch
    import yaml
    from funasr.register import tables

    import funasr  # noqa: F401  (registers its classes)

    folder.mkdir(parents=True)
    (folder / "tokens.json").write_text(json.dumps(TOKENS, ensure_ascii=False), encoding="utf-8")
    (folder / "config.yaml").write_text(yaml.safe_dump(CONFIG, allow_unicode=True), encoding="utf-8")
    dim = 80 * 7  # Kaldi's nnet1 text: a shift and a scale per low-frame-rate feature
    (folder / "am.mvn").write_text(f"<Nnet>\n<Splice> {dim} {dim}\n[ 0 ]\n<AddShift> {dim} {dim}\n<LearnRateCoef> 0 "
                                   f"[ {' '.join(['-8.0'] * dim)} ]\n<Rescale> {dim} {dim}\n<LearnRateCoef> 0 "
                                   f"[ {' '.join(['0.25'] * dim)} ]\n</Nnet>\n")
    torch.manual_seed(0)
    frontend = tables.frontend_classes["WavFrontend"](**CONFIG["frontend_conf"], cmvn_file=str(folder / "am.mvn"))
    model = tables.model_classes["Paraformer"](
        **CONFIG["model_conf"], **{k: CONFIG[k] for k in ("encoder", "encoder_conf", "decoder", "decoder_conf",
                                                          "predictor", "predictor_conf")},
        input_size=frontend.output_size(), vocab_size=len(TOKENS))
    torch.save(model.state_dict(), folder / "model.pt")
    return folder


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    """Three clips of different lengths, with Chinese references, in a TSV manifest."""
    folder = tmp_path_factory.mktemp("zh")
    rng = np.random.default_rng(0)
    texts = ["今天天气很好，我们去公园散步吧。", "北京是中国的首都。", "我们去公园。"]
    lines = ["id\taudio\treference"]
    for i, text in enumerate(texts):
        sf.write(folder / f"z{i}.wav", (0.1 * rng.standard_normal(16000 * (1 + i))).astype(np.float32), 16000)
        lines.append(f"z{i}\tz{i}.wav\t{text}")
    (folder / "zh.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_a_paraformer_found_where_funasr_keeps_it_transcribes_each_clip_alone(tmp_path, recordings):
    models = tmp_path / "models"
    paraformer(models / "funasr" / "paraformer-zh")  # a drop-in folder: the recipe's model by its name
    # the preset in Chinese runs funasr:paraformer-zh, seed-tts-eval's test-zh ASR
    args = ["--audio-manifest", str(recordings / "zh.tsv"), "--measures", "none", "--preset", "seed-tts-eval",
            "--language", "zh"]
    proc = cli(tmp_path, *args, models=models)
    run = tmp_path / "results" / "default"
    rows = store.read_csv(run / "utterances.csv")
    assert [r["status"] for r in rows] == ["ok"] * 3 and all(r["hypothesis"] for r in rows)
    assert set("".join(r["hypothesis"] for r in rows)) <= set(TOKENS)  # the model's own vocabulary
    summary = store.read_json(run / "summary.json")
    assert summary["rate"] == "CER" and summary["comparable"]["exact"], summary["comparable"]
    assert {r["asr"] for r in rows} == {"funasr:paraformer-zh"}
    assert "CER comparable with seed-tts-eval's Chinese CER table (test-zh)" in proc.stdout
    manifest = store.read_json(run / "manifest.json")
    assert manifest["versions"]["funasr"] == "1.4.16"
    # each clip alone: one clip's manifest gives it the transcript it had among the three
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "one.tsv").write_text(f"id\taudio\treference\nz2\t{recordings / 'z2.wav'}\t我们去公园。\n",
                                   encoding="utf-8")
    cli(alone, *[a if a != str(recordings / "zh.tsv") else "one.tsv" for a in args], models=models)
    (single,) = store.read_csv(alone / "results" / "default" / "utterances.csv")
    assert single["hypothesis"] == rows[2]["hypothesis"]


def test_a_paraformer_found_nowhere_stops_before_any_work_with_the_fix(tmp_path, recordings):
    env = {"MODELSCOPE_CACHE": str(tmp_path / "ms"), "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    proc = cli(tmp_path, "--audio-manifest", str(recordings / "zh.tsv"), "--language", "zh", "--asr",
               "funasr:paraformer-zh", models=tmp_path / "models", env={**os.environ, **env}, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "funasr:paraformer-zh: model not found" in proc.stderr
    assert "AutoModel(model='paraformer-zh')" in proc.stderr and str(tmp_path / "ms") in proc.stderr
    assert not (tmp_path / "results" / "default" / "utterances.csv").exists()
    bad = cli(tmp_path, "--audio-manifest", str(recordings / "zh.tsv"), "--language", "zh", "--asr",
              f"funasr:{recordings}", models=tmp_path / "models", check=False)
    assert bad.returncode == 2 and "is not a FunASR model folder (no config.yaml, model.pt)" in bad.stderr
    english = cli(tmp_path, "--audio-manifest", str(recordings / "zh.tsv"), "--asr", "funasr:paraformer-zh",
                  models=tmp_path / "models", check=False)
    assert english.returncode == 2 and "hears Mandarin Chinese; use --language zh" in english.stderr
