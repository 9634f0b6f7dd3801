"""The device setting. The CUDA tests are marked `gpu` and skipped where torch sees no GPU; on CPU machines the
checks here are that CPU stays the default and that asking for CUDA without one is a clear error."""
import pytest
import torch

from pipeline.cli import main
from pipeline.config import run as config
from pipeline.core import store
from pipeline.exec import device
from tests.helpers import SENTENCES, TINY, cli, write_sentences

CUDA = torch.cuda.is_available()
gpu = pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU (torch.cuda.is_available() is False)")


@pytest.mark.skipif(CUDA, reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_a_config_error(capsys, tmp_path):
    assert main(["--print-config", "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert "device = 'cuda'" in err and "--device cpu" in err
    cfg = config.load(overrides={"models_dir": str(tmp_path)})
    assert cfg.device == "cpu"  # auto, resolved: no key ever holds "auto"


def test_the_training_precision_is_measured_once_per_machine_and_forced_when_asked(tmp_path):
    device.precision("auto", "cpu", str(tmp_path))  # measured here, once
    measured = store.read_json(tmp_path / "hardware.json")[device.machine()]
    assert measured["fp32_gflops"] > 0 and measured["bf16_gflops"] > 0
    assert device.peaks(str(tmp_path)) == measured  # read back, not measured again
    # the choice, from rates written as three machines of this kind measured them: bf16 only when clearly faster
    for (fp32, bf16), chosen in (((110.0, 1.2), "fp32"), ((202.0, 440.0), "bf16"), ((200.0, 240.0), "fp32")):
        store.write_json(tmp_path / "hardware.json", {device.machine(): {"fp32_gflops": fp32, "bf16_gflops": bf16}})
        assert device.precision("auto", "cpu", str(tmp_path)) == chosen, (fp32, bf16)
    assert device.precision("fp32", "cpu", str(tmp_path)) == "fp32"
    cfg = config.load(overrides={"models_dir": str(tmp_path), "train.precision": "bf16"})
    assert cfg.train.precision == "bf16"


def test_bf16_on_a_cpu_without_it_is_explained_with_the_measured_rates(tmp_path):
    """Where bf16 matmuls run slower than fp32 ones, asking for bf16 is allowed and explained; on a GPU or a CPU
    with native bf16 nothing is said. The rates are read from models/hardware.json, as measured on a machine."""
    for (bf16, fp32), slow in (((1.2, 110.0), True), ((440.0, 202.0), False)):
        store.write_json(tmp_path / "hardware.json", {device.machine(): {"fp32_gflops": fp32, "bf16_gflops": bf16}})
        why = device.software_bf16("cpu", str(tmp_path))
        assert bool(why) == slow
        if slow:
            assert "no native bf16" in why and "1.2 GFLOP/s against 110" in why and "hardware.json" in why
        assert device.software_bf16("cuda", str(tmp_path)) == ""


def test_training_in_bf16_where_it_is_slow_says_so(tmp_path):
    """`--precision bf16` trains in bf16 however slow it is here, and warns when this machine measured bf16 below
    fp32; `auto` never picks it there."""
    models = tmp_path / "models"
    proc = cli(tmp_path, "--stages", "prepare,train", "--precision", "bf16", "--iters", "2",
               "--set", "model.n_layer=1", "--set", "model.n_embd=16", "--set", "model.n_head=1",
               "--set", "model.block_size=8", "--set", "train.batch_size=2", "--set", "train.eval_iters=1",
               models=models)
    rates = device.peaks(str(models))
    assert rates, "the run measured this machine"
    warned = "train.precision = bf16: this CPU has no native bf16" in proc.stderr
    assert warned == (rates["bf16_gflops"] < rates["fp32_gflops"]), proc.stderr[-2000:]
    lm = next(models.glob("lm-*"))
    assert store.read_json(lm / "train.json")["train"]["precision"] == "bf16"


def test_the_device_is_in_the_keys_of_the_stages_that_run_models():
    from pipeline.run import runner
    from pipeline.stages import ALL

    declared = {s.name: s.config for s in runner.plan(config.Config(), ALL)}
    for name in ("train", "sample", "transcribe"):
        assert "device" in declared[name], name
    assert "device" not in declared["synthesize"]


@gpu
@pytest.mark.gpu
def test_fused_loss_on_cuda_equals_cross_entropy():
    from pipeline.lm.fused_loss import head_loss

    torch.manual_seed(0)
    h = torch.randn(300, 64, device="cuda", requires_grad=True)
    w = torch.randn(1000, 64, device="cuda", requires_grad=True)
    t = torch.randint(0, 1000, (300,), device="cuda")
    ours = head_loss(h, w, t)
    ours.backward()
    gh, gw = h.grad.clone(), w.grad.clone()
    h.grad = w.grad = None
    ref = torch.nn.functional.cross_entropy(h @ w.t(), t)
    ref.backward()
    assert torch.allclose(ours, ref, atol=1e-5) and torch.allclose(gh, h.grad, atol=1e-5)
    assert torch.allclose(gw, w.grad, atol=1e-5)


@gpu
@pytest.mark.gpu
def test_the_captured_cuda_step_trains_as_the_eager_one():
    """CUDA graphs replay the step the eager code runs: the same first loss to rounding, and a curve that follows."""
    import numpy as np

    from pipeline.lm.config import GPTConfig, TrainConfig
    from pipeline.lm.model import GPT
    from pipeline.lm.trainer import make_optimizer, training_step

    cfg = TrainConfig()
    data = np.random.default_rng(0).integers(0, 1000, size=(40, 2, 8, 32))
    curves = []
    for captured in (True, False):
        torch.manual_seed(0)
        model = GPT(GPTConfig(n_layer=1, n_embd=32, n_head=2, block_size=32)).cuda()
        optimizer = make_optimizer(model, cfg)
        step = training_step(model, "fp32", "cuda")
        losses = []
        for x, y in torch.from_numpy(data).cuda():
            optimizer.zero_grad(set_to_none=True)
            if captured:
                loss = step(x, y)
            else:
                _, loss = model(x, y, fused_loss=False)
                loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
        curves.append(losses)
    assert abs(curves[0][0] - curves[1][0]) < 1e-4
    assert abs(np.mean(curves[0][-10:]) - np.mean(curves[1][-10:])) < 0.02


@gpu
@pytest.mark.gpu
def test_the_pipeline_runs_its_models_on_the_gpu(tmp_path, models_dir):
    sentences = write_sentences(tmp_path / "s.txt", SENTENCES[:2])
    cli(tmp_path, "--sentences", str(sentences), *TINY, "--device", "cuda", models=models_dir)
    manifest = store.read_json(tmp_path / "results" / "default" / "manifest.json")
    assert manifest["config"]["device"] == "cuda"
    assert manifest["stage_devices"]["transcribe"] == "cuda"


def test_the_gpu_checks_random_whisper_is_the_same_model_every_time():
    """whisper leaves its decoder's positional embedding uninitialised; a check that built the model once per device
    compared two models that differed in it, and failed on a CPU against itself."""
    from bench.gpu_check import random_whisper

    first, second = random_whisper().state_dict(), random_whisper().state_dict()
    assert first.keys() == second.keys()
    for name, tensor in first.items():
        if not tensor.is_sparse:  # alignment_heads, a mask
            assert torch.equal(tensor, second[name]), name
            assert torch.isfinite(tensor).all(), name


@pytest.mark.slow
def test_the_gpu_check_passes_its_dry_run_on_the_cpu():
    """The script a lent GPU machine runs first, end to end on the CPU against itself, so that a device's few minutes
    are not lost to a crash or a comparison that fails on its own."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "bench" / "gpu_check.py"
    out = subprocess.run([sys.executable, str(script), "--device", "cpu", "--iters", "3", "--utterances", "2"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.rstrip().endswith("GPU CHECK PASSED")
    report = json.loads(out.stdout[out.stdout.index("\n{") + 1:out.stdout.rindex("}") + 1])
    for precision in ("fp32", "fp16"):
        agreement = report[f"whisper_{precision}_logits"]
        assert agreement["ok"] and agreement["relative"] <= agreement["tolerance"]
        assert agreement["argmax_equal"] == 1.0
    assert report["train_ratio"]["ours_ms"] > 0 and report["train_ratio"]["loss_within_0.03"]
    assert len(report["samples"]) == 2 and all(p > 1 for p in report["perplexity"])
