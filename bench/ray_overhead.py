"""Local executor vs Ray on this machine: 200 sentences, piper:joe, the default ASR.

    .venv/bin/python bench/ray_overhead.py [--sentences 200]

Each executor runs the real pipeline (--sentences, fresh run directory, models shared) in a subprocess. Peak
memory is the largest sum of RSS over the whole process tree (driver, Ray's raylet/GCS and its workers), sampled
every 0.2 s. Writes bench/out/ray_overhead.md, with a projection to N nodes from the measured per-item costs."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import ROOT, shakespeare_lines, write_report

from pipeline.core import store


def tree_rss_mb(root_pid: int) -> float:
    """Sum of RSS over root_pid and every process descended from it."""
    parents, rss = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            parents[int(entry)] = int(fields[1])
            rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    total, stack, seen = 0, [root_pid], set()
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += rss.get(pid, 0)
        stack.extend(child for child, parent in parents.items() if parent == pid)
    return total / 2**20


def run(cwd: Path, extra: list[str]) -> tuple[float, float]:
    env = {**os.environ, "TQDM_DISABLE": "1", "RAY_AUTH_MODE": "disabled"}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(ROOT / "run_pipeline.py"), "--sentences", "s.txt",
                             "--set", f"models_dir={ROOT / 'models'}", "--set", "cache_dir=off", *extra],
                            cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = [0.0]

    def sample():
        while proc.poll() is None:
            peak[0] = max(peak[0], tree_rss_mb(proc.pid))
            time.sleep(0.2)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    _, err = proc.communicate()
    watcher.join()
    if proc.returncode not in (0, 1):
        sys.exit(err[-3000:])
    return time.perf_counter() - t0, peak[0]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sentences", type=int, default=200)
    args = p.parse_args()
    lines = shakespeare_lines(args.sentences, 5, 16)
    work = Path(tempfile.mkdtemp(prefix="raybench-"))
    results = {}
    for name, extra in (("local", []), ("ray", ["--executor", "ray", "--set", "executor.num_cpus=2"])):
        cwd = work / name
        cwd.mkdir()
        (cwd / "s.txt").write_text("\n".join(lines) + "\n")
        wall, peak = run(cwd, extra)
        manifest = store.read_json(cwd / "results/default/manifest.json")
        results[name] = {"wall": wall, "peak": peak, "stages": manifest["stage_seconds"]}
        print(f"{name}: {wall:.0f} s, peak tree RSS {peak:.0f} MB, stages {manifest['stage_seconds']}", flush=True)
    local, ray = results["local"], results["ray"]
    synth = store.read_csv(work / "local/results/default/synthesis.csv")
    trans = store.read_csv(work / "local/results/default/transcripts.csv")
    t_tts = sum(float(r["tts_seconds"] or 0) for r in synth) / len(synth)
    t_asr = sum(float(r["asr_seconds"] or 0) for r in trans) / len(trans)
    fixed = local["wall"] - local["stages"]["synthesize"] - local["stages"]["transcribe"]
    n = args.sentences
    lines_out = [f"# Local executor vs Ray, {n} sentences, piper:joe, faster-whisper:base int8, this 2-core machine", "",
                 "| executor | wall s | × local | synthesize s | transcribe s | peak RSS of the process tree MB |",
                 "|---|---|---|---|---|---|"]
    for name, r in results.items():
        lines_out.append(f"| {name} | {r['wall']:.0f} | {r['wall'] / local['wall']:.2f} | "
                         f"{r['stages']['synthesize']:.0f} | {r['stages']['transcribe']:.0f} | {r['peak']:.0f} |")
    lines_out += ["", "## Projection to N nodes", "",
                  f"Measured per item here: synthesis {t_tts:.3f} s, transcription {t_asr:.3f} s (batched, per "
                  f"utterance), {fixed:.0f} s outside those two stages (imports, scoring, report).",
                  "With N nodes of c cores, one single-threaded actor per core, the two stages divide by N·c while "
                  "the driver's work and Ray's start-up (measured above as the difference ray − local on one node) "
                  "stay:", "",
                  "    T(N) ≈ fixed + ray_startup + items · (t_tts + t_asr) / (N · c)", "",
                  "| items | N nodes × 8 cores | projected wall |", "|---|---|---|"]
    startup = max(ray["wall"] - local["wall"], 0.0)
    for items in (10_000, 100_000):
        for nodes in (1, 4, 16):
            t = fixed + startup + items * (t_tts + t_asr) / (nodes * 8)
            lines_out.append(f"| {items:,} | {nodes} × 8 | {t / 60:.0f} min |")
    write_report("ray_overhead", lines_out)


if __name__ == "__main__":
    main()
