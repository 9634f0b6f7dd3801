import numpy as np
import pytest

from pipeline.errors import ConfigError
from pipeline.io import conditions


def snr_db(clean: np.ndarray, mixed: np.ndarray) -> float:
    noise = mixed.astype(np.float64) - clean
    return 10 * np.log10(np.mean(clean.astype(np.float64) ** 2) / np.mean(noise ** 2))


@pytest.mark.parametrize("target", [20.0, 10.0, 5.0, 0.0, -5.0])
def test_white_noise_is_mixed_at_the_exact_snr(target):
    sr = 16000
    t = np.arange(sr * 2) / sr
    clean = (0.05 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)  # quiet: no rescaling needed
    mixed = conditions.apply(conditions.parse(f"noise:snr={target:g}"), clean, sr, seed=7)
    assert snr_db(clean, mixed) == pytest.approx(target, abs=0.01)
    again = conditions.apply(conditions.parse(f"noise:snr={target:g}"), clean, sr, seed=7)
    assert np.array_equal(mixed, again)  # seeded
    other = conditions.apply(conditions.parse(f"noise:snr={target:g}"), clean, sr, seed=8)
    assert not np.array_equal(mixed, other)


def test_loud_mixtures_are_scaled_not_clipped():
    sr = 16000
    clean = (0.9 * np.sin(2 * np.pi * 220 * np.arange(sr) / sr)).astype(np.float32)
    mixed = conditions.apply(conditions.parse("noise:snr=0"), clean, sr, seed=1)
    assert np.abs(mixed).max() == pytest.approx(1.0, abs=1e-6)
    gain = float(np.dot(mixed, clean) / np.dot(clean, clean))  # noise is uncorrelated with the tone
    assert snr_db(clean, mixed / gain) == pytest.approx(0.0, abs=0.1)


def test_speed_changes_duration_by_resampling():
    sr = 22050
    clean = np.random.default_rng(0).standard_normal(sr).astype(np.float32) * 0.1
    fast = conditions.apply(conditions.parse("speed:1.1"), clean, sr, seed=0)
    slow = conditions.apply(conditions.parse("speed:0.9"), clean, sr, seed=0)
    assert len(fast) == pytest.approx(sr / 1.1, rel=0.002)
    assert len(slow) == pytest.approx(sr / 0.9, rel=0.002)


def test_item_seeds_are_stable_and_distinct():
    a = conditions.item_seed(1337, "piper:joe", "noise:snr=10", "s00-01")
    assert a == conditions.item_seed(1337, "piper:joe", "noise:snr=10", "s00-01")
    assert a != conditions.item_seed(1337, "piper:joe", "noise:snr=10", "s00-02")


@pytest.mark.parametrize("bad", ["noise:snr=loud", "speed:fast", "speed:10", "echo", "noise:20"])
def test_bad_conditions_name_the_allowed_forms(bad):
    with pytest.raises(ConfigError, match="noise:snr"):
        conditions.parse(bad)
