"""Where the model work runs (`device`: auto, cpu or cuda) and in which precision the LM trains.

Both are resolved when the config is loaded, so that every cache key, the LM's directory and the manifest hold
what really ran: "auto" never reaches a key. On a CPU the training precision is chosen by measuring the matmul
peak of each dtype on this machine (bf16 only when clearly faster: machines of this kind differ, from half
to four times fp32's speed); the measurement is kept in models/hardware.json, so the choice is stable from run to
run on one machine. On a GPU, bf16 autocast where the GPU supports it."""
from __future__ import annotations

import os
import platform
import shutil
import time
from importlib.metadata import version
from pathlib import Path

from pipeline.core import store
from pipeline.errors import ConfigError

DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("auto", "fp32", "bf16")
BF16_MARGIN = 1.5  # bf16 is chosen only this much faster than fp32: a near tie must not flip between runs


def cuda_available() -> bool:
    # Without a GPU driver there is no CUDA: answered without importing torch (seconds a rerun need not pay).
    # /dev/kfd is ROCm's, whose torch also answers through torch.cuda.
    if not (Path("/proc/driver/nvidia/version").exists() or Path("/dev/kfd").exists() or shutil.which("nvidia-smi")):
        return False
    import torch

    return torch.cuda.is_available()


def resolve(device: str) -> str:
    if device == "cuda" and not cuda_available():
        raise ConfigError("device = 'cuda': torch sees no CUDA GPU here (torch.cuda.is_available() is False); use "
                          "--device cpu or auto, or install a CUDA build of torch (README: GPU machines)")
    if device == "auto":
        return "cuda" if cuda_available() else "cpu"
    return device


def matmul_gflops(dtype_name: str, device: str = "cpu", size: int = 512, seconds: float = 0.25) -> float:
    """The matmul rate of one dtype, measured for about `seconds`."""
    import torch

    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
    a = torch.randn(size, size, device=device).to(dtype)
    b = torch.randn(size, size, device=device).to(dtype)
    a @ b  # warm-up
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        a @ b
        n += 1
    if device == "cuda":
        torch.cuda.synchronize()
    return 2 * size ** 3 * n / (time.perf_counter() - t0) / 1e9


def machine() -> str:
    """What a measurement holds for: the CPU, its cores and the torch build."""
    return f"{platform.machine()} {platform.processor() or _cpu_name()} cores={os.cpu_count()} torch={version('torch')}"


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "cpu"


def precision(requested: str, device: str, models_dir: str) -> str:
    """The training precision: as asked, or for "auto" the faster one here."""
    if requested != "auto":
        return requested
    if device == "cuda":
        import torch

        return "bf16" if torch.cuda.is_bf16_supported() else "fp32"
    rates = measured_peaks(models_dir)
    return "bf16" if rates["bf16_gflops"] > BF16_MARGIN * rates["fp32_gflops"] else "fp32"


def measured_peaks(models_dir: str) -> dict:
    """This CPU's matmul rate in each dtype: measured once (a quarter of a second each), then read from
    models/hardware.json."""
    cache_path = Path(models_dir) / "hardware.json"
    cache = store.read_json_or_empty(cache_path)
    key = machine()
    if key not in cache:
        cache[key] = {"fp32_gflops": round(matmul_gflops("fp32"), 1), "bf16_gflops": round(matmul_gflops("bf16"), 1)}
        try:
            store.write_json(cache_path, cache)
        except OSError:
            pass  # measured again next time
    return cache[key]


def software_bf16(device: str, models_dir: str) -> str:
    """Why bf16 is slow here, for a warning to whoever asked for it: '' on a GPU or a CPU with native bf16; on a CPU
    whose bf16 matmul is slower than its fp32 one (torch then computes bf16 in software), the measured rates."""
    if device != "cpu":
        return ""
    rates = measured_peaks(models_dir)
    if rates["bf16_gflops"] >= rates["fp32_gflops"]:
        return ""
    return (f"this CPU has no native bf16 (its bf16 matmul runs at {rates['bf16_gflops']:g} GFLOP/s against "
            f"{rates['fp32_gflops']:g} for fp32, measured once and kept in {Path(models_dir) / 'hardware.json'})")


def peaks(models_dir: str) -> dict:
    """What was measured on this machine, for the manifest."""
    return store.read_json_or_empty(Path(models_dir) / "hardware.json").get(machine(), {})
