"""The first run on a fresh clone, as a user meets it: setup, then the default pipeline, then a rerun.

    .venv/bin/python bench/cold_run.py [--report NAME] [-- run_pipeline.py arguments, e.g. --iters 200]

Clones the committed HEAD into a temporary folder (nothing of this checkout's models/, audio/ or results/ comes
along), times `scripts/setup` there (pip's download cache is the machine's, so this is the install time, not the
download time), then `.venv/bin/python run_pipeline.py`, with each stage's seconds from its manifest, then three
reruns (the best counts). Python runs as on a user's machine, writing its bytecode cache: PYTHONDONTWRITEBYTECODE,
which some sandboxes set, is dropped (scripts/setup compiles the project's own modules either way).
The goal (≤ 5 minutes for the run, the setup apart; ≤ 1 s for the rerun) is printed as met or not met. A missed
run gets the training's budget (what the goal leaves it once the other stages are paid, per step) beside the step
`bench/train_speed.py` measured on this CPU in the precision the run trained in, and its matmul floor. Each
measure's seconds in the run (the assess stage records them) stand beside the same measure alone, in a process of
its own, on the run's clips, and all of them beside transcription. Writes bench/out/cold_run.{json,md}, or
NAME.{json,md}: cold_run is the default run's report, cold_run_measures the short run's (`--iters 200`)."""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, cpu_name, write_report

RUN_GOAL_S, RERUN_GOAL_S = 300.0, 1.0


def timed(argv: list[str], cwd: Path) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t0
    if proc.returncode not in (0, 1):  # 1: a health flag was raised, the run itself completed
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return seconds


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    p.add_argument("--report", default="cold_run", help="the report's name in bench/out/ (default: cold_run)")
    p.add_argument("args", nargs="*", help="arguments for run_pipeline.py (after --)")
    args = p.parse_args()
    clone = Path(tempfile.mkdtemp(prefix="cold_run-")) / "repo"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True).stdout
    try:
        setup_s = timed(["scripts/setup"], clone)
        run_s = timed([".venv/bin/python", "run_pipeline.py", *args.args], clone)
        run_dir = next((clone / "results").glob("*/manifest.json")).parent
        manifest = json.loads((run_dir / "manifest.json").read_text())
        stages = manifest.get("stage_seconds", {})
        measured = manifest.get("stage_results", {}).get("assess", {}).get("measure_seconds", {})
        with open(run_dir / "synthesis.csv") as f:
            audio_s = sum(float(r["audio_seconds"] or 0) for r in csv.DictReader(f) if r["status"] == "ok")
        alone_s = {name: alone(clone, run_dir, name) for name in measured}
        rerun_s = min(timed([".venv/bin/python", "run_pipeline.py", *args.args], clone) for _ in range(3))
        iters = manifest["config"]["train"]["max_iters"]
        precision = manifest["config"]["train"]["precision"]
    finally:
        if args.keep:
            print(f"clone kept: {clone}")
        else:
            shutil.rmtree(clone.parent, ignore_errors=True)
    floor = json.loads((ROOT / "bench" / "out" / "train_speed.json").read_text()) \
        if (ROOT / "bench" / "out" / "train_speed.json").exists() else None
    given = " ".join(args.args) or "(the defaults: PA6a config)"
    lines = [f"# Cold run of {head.strip()}, `run_pipeline.py {given}`, {iters} training iterations ({cpu_name()})", "",
             "| what | s |", "|---|---|", f"| `scripts/setup` (apart from the goal; pip's cache warm) | {setup_s:.0f} |",
             f"| **`run_pipeline.py`, first run** | **{run_s:.0f}** |",
             *[f"| — {name} | {s:.1f} |" for name, s in stages.items()],
             f"| rerun, every stage up to date (best of 3) | {rerun_s:.2f} |", "",
             f"**Goal: the first run ≤ {RUN_GOAL_S / 60:.0f} min: {'met' if run_s <= RUN_GOAL_S else 'not met'}** "
             f"({run_s / 60:.1f} min; {(setup_s + run_s) / 60:.1f} min with the setup). "
             f"**Rerun ≤ {RERUN_GOAL_S:g} s: {'met' if rerun_s <= RERUN_GOAL_S else 'not met'}** ({rerun_s:.2f} s)."]
    variant = "ours+bf16" if precision == "bf16" else "ours"
    step = next((r for r in floor["results"] if r["variant"] == variant), None) if floor else None
    if step and floor.get("cpu") == cpu_name() and run_s > RUN_GOAL_S:
        others_s = run_s - stages.get("train", float("nan"))
        peak = floor["peaks_gflops"][precision]
        floor_ms = 1000 * floor["step_gflop"] / peak
        budget_s = RUN_GOAL_S - others_s
        lines += ["", f"Budget: the other stages took {others_s:.0f} s, which leaves training {budget_s:.0f} s for "
                  f"the goal, {1000 * budget_s / iters:.0f} ms a step with its evaluations. "
                  f"A step in {precision} takes {step['ms_per_iter']:.0f} ms in `bench/train_speed.py` on this CPU "
                  f"(bench/out/train_speed.json), and its {floor['step_gflop']:.1f} GFLOP of matmul alone take "
                  f"{floor_ms:.0f} ms at the {precision} peak measured there ({peak:.0f} GFLOP/s): "
                  f"{iters * floor_ms / 1000:.0f} s for {iters} steps."]
    lines += measures_beside_alone(measured, alone_s, audio_s, stages.get("transcribe"))
    write_report(args.report, lines, {"head": head.strip(), "args": args.args, "setup_s": setup_s, "run_s": run_s,
                                     "rerun_s": rerun_s, "stage_seconds": stages, "measure_seconds": measured,
                                     "alone_seconds": alone_s,
                                     "audio_s": audio_s, "cpu": cpu_name()})


ALONE = """
import sys, time
from pipeline.io import audio
from pipeline.measures import base
from pipeline.measures.assessor import Assessor, Clip
name, paths = sys.argv[1], sys.argv[2:]
clips = [audio.load_16k(p) for p in paths]
declared = base.MEASURES.get(name)
started = time.perf_counter()
Assessor(name, declared.source()).work([Clip(x, dict.fromkeys(declared.needs)) for x in clips])
print(time.perf_counter() - started)
"""


def alone(clone: Path, run_dir: Path, name: str) -> float:
    """The measure alone, in a process of its own, on the run's own clips: its load and its scores, timed."""
    with open(run_dir / "synthesis.csv") as f:
        paths = [str(clone / r["audio_path"]) for r in csv.DictReader(f) if r["status"] == "ok"]
    proc = subprocess.run([str(clone / ".venv/bin/python"), "-c", ALONE, name, *paths], cwd=clone,
                          capture_output=True, text=True, check=True)
    return float(proc.stdout.split()[-1])


def measures_beside_alone(measured: dict[str, float], alone_s: dict[str, float], audio_s: float,
                          transcribe_s: float | None) -> list[str]:
    """Each measure's seconds in the run (its load included) beside the same measure alone on the same clips."""
    if not measured:
        return []
    out = ["", f"**The measures in the run** ({audio_s:.0f} s of audio), each beside itself alone on the same clips "
           "in a process of its own (load included):", "",
           "| measure | in the run, s | alone, s | run ÷ alone |", "|---|---|---|---|"]
    out += [f"| {name} | {seconds:.1f} | {alone_s[name]:.1f} | {seconds / alone_s[name]:.2f} |"
            for name, seconds in measured.items()]
    total = sum(measured.values())
    if transcribe_s:
        out += ["", f"All measures together: {total:.1f} s (alone, one after another: {sum(alone_s.values()):.1f} s); "
                f"transcription: {transcribe_s:.1f} s. **Goal: the stage no slower than its measures alone: "
                f"{'met' if total <= sum(alone_s.values()) else 'not met'}; the measures no slower than "
                f"transcription: {'met' if total <= transcribe_s else 'not met'}**."]
    return out


if __name__ == "__main__":
    main()
