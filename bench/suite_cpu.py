"""Where the test suite's time goes, in CPU seconds: the figure that decides its length on a busy machine.

    .venv/bin/python bench/suite_cpu.py [pytest arguments, e.g. -m "not slow" or tests/test_ray.py]

Runs the suite as the README does (its four workers) with this file as a pytest plugin, which records for each
test its wall time and the CPU time of its worker and of the processes it waited for (its pipeline runs). pytest's
own --durations gives wall time alone, which on two cores shared by four workers measures the neighbours as much
as the test. Also records the machine's busy share over the run from /proc/stat: near 100%, the suite is
CPU-bound, and only fewer computations shorten it. Ray's daemons and actors are no test's children: their CPU
shows in the machine's total, not in a test's; a process counts in the test that waited for it (a server stopped
by a module's teardown, in that module's last test). Writes bench/out/suite_cpu.md, and the rows (with each
test's worker and start time: where the suite's end waits on one worker) to bench/out/suite_cpu.jsonl."""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

OUT_VAR = "SUITE_CPU_OUT"  # where the plugin, in each worker, appends its rows (one JSON object a line)
TOP = 25


def cpu_seconds() -> tuple[float, float]:
    own, waited = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, waited.ru_utime + waited.ru_stime


def machine_ticks() -> tuple[int, int]:
    """(busy, all) clock ticks of every core since boot."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return sum(fields) - idle, sum(fields)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """As a plugin: one row per test, its setup and teardown included (a module's fixture counts where it is made)."""
    start, (own0, waited0) = time.time(), cpu_seconds()
    yield
    own1, waited1 = cpu_seconds()
    path = os.environ.get(OUT_VAR)
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"test": item.nodeid, "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
                                "start": start, "wall": time.time() - start,
                                "cpu": own1 - own0 + waited1 - waited0}) + "\n")


def table(rows: list[dict], key: str, title: str) -> list[str]:
    lines = [f"| {title} | CPU s | wall s |", "|---|---|---|"]
    return lines + [f"| {r[key]} | {r['cpu']:.1f} | {r['wall']:.1f} |" for r in rows[:TOP]]


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from common import ROOT, cpu_name, write_report

    rows_path = ROOT / "bench" / "out" / "suite_cpu.jsonl"
    rows_path.parent.mkdir(exist_ok=True)
    rows_path.unlink(missing_ok=True)
    env = {**os.environ, OUT_VAR: str(rows_path),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "bench"), os.environ.get("PYTHONPATH")]))}
    busy0, all0 = machine_ticks()
    load0 = os.getloadavg()[0]
    started = time.perf_counter()
    code = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "suite_cpu", "-p", "no:cacheprovider",
                            *sys.argv[1:]], cwd=ROOT, env=env)
    wall = time.perf_counter() - started
    busy1, all1 = machine_ticks()
    rows = [json.loads(line) for line in rows_path.read_text().splitlines()] if rows_path.exists() else []
    if not rows:
        print("no test ran", file=sys.stderr)
        return code or 1
    machine_cpu = (busy1 - busy0) / os.sysconf("SC_CLK_TCK")
    busy = (busy1 - busy0) / max(all1 - all0, 1)
    by_file: dict[str, dict] = defaultdict(lambda: {"cpu": 0.0, "wall": 0.0})
    for r in rows:
        total = by_file[r["test"].split("::")[0]]
        total["cpu"] += r["cpu"]
        total["wall"] += r["wall"]
    files = sorted(({"file": f, **v} for f, v in by_file.items()), key=lambda r: -r["cpu"])
    tests = sorted(rows, key=lambda r: -r["cpu"])
    tests_cpu = sum(r["cpu"] for r in rows)
    begun = min(r["start"] for r in rows)
    workers = defaultdict(list)
    for r in rows:
        workers[r["worker"]].append(r)
    lines = ["# The test suite's CPU time", "",
             f"{cpu_name()}; load average {load0:.2f} at the start; pytest exit code {code}; "
             f"arguments: {' '.join(sys.argv[1:]) or '(the full suite)'}.", "",
             f"- {len(rows)} tests in {int(wall // 60)}:{int(wall % 60):02d}; the machine was {busy:.0%} busy: "
             f"{machine_cpu:.0f} CPU-s on {os.cpu_count()} cores.",
             f"- The tests and the processes they waited for: {tests_cpu:.0f} CPU-s (the rest: Ray's daemons and "
             "actors, pytest itself, anything else on the machine).",
             f"- On {os.cpu_count()} cores at that busy share, each 100 CPU-s taken out is about "
             f"{100 / os.cpu_count() / max(busy, 0.01):.0f} s of the suite's wall time.", "",
             "## Workers: when each ran out of files (seconds from the first test's start)", "",
             "| worker | tests | last test ended | its tests' CPU s |", "|---|---|---|---|",
             *(f"| {w} | {len(rs)} | {max(r['start'] + r['wall'] for r in rs) - begun:.0f} | "
               f"{sum(r['cpu'] for r in rs):.0f} |" for w, rs in sorted(workers.items())), "",
             f"## Files, by CPU (the first {TOP})", "", *table(files, "file", "file"), "",
             f"## Tests, by CPU (the first {TOP}; a module's fixture counts in the test that made it)", "",
             *table(tests, "test", "test")]
    write_report("suite_cpu", lines)
    return code


if __name__ == "__main__":
    sys.exit(main())
