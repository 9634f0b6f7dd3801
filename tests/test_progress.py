"""Progress in a log file: a plain line at most every 30 s, so a redirected run's log stays readable; and the
`speech-eval` console command."""
import io
import subprocess
import sys
from pathlib import Path

from pipeline.exec.progress import LogBar


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_long_loop_logs_a_line_at_most_every_30_s():
    clock, out = Clock(), io.StringIO()
    bar = LogBar(range(2000), total=2000, desc="train", clock=clock, stream=out)
    for i in bar:  # 2000 iterations of 0.5 s: the default training run on a slow CPU
        clock.now += 0.5
        bar.set_postfix(loss=f"{5 - i / 1000:.3f}", refresh=False)
        if i % 250 == 0:
            bar.write(f"iter {i}")
    bar.close()
    lines = out.getvalue().splitlines()
    progress = [line for line in lines if line.startswith("train: ")]
    assert 2000 * 0.5 / 30 - 1 <= len(progress) <= 2000 * 0.5 / 30 + 2
    assert len(lines) < 100 and progress[-1].startswith("train: 2000/2000 (100%)")
    assert progress[-1].endswith("loss=3.001")
    assert sum(line.startswith("iter ") for line in lines) == 8


def test_a_resumed_loop_counts_from_where_it_resumed():
    clock, out = Clock(), io.StringIO()
    bar = LogBar(range(1500, 2000), initial=1500, total=2000, desc="train", clock=clock, stream=out, interval=1)
    for _ in bar:
        clock.now += 0.01
    bar.close()
    assert out.getvalue().splitlines()[-1].startswith("train: 2000/2000 (100%), 100.00 it/s")


def test_the_speech_eval_command_is_the_pipeline(tmp_path):
    command = Path(sys.executable).parent / "speech-eval"
    (tmp_path / "s.txt").write_text("To be, or not to be.\n")
    proc = subprocess.run([str(command), "--plan", "--sentences", str(tmp_path / "s.txt")], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    assert "synthesize:" in proc.stdout and "transcribe:" in proc.stdout
    help_text = subprocess.run([str(command), "--help"], capture_output=True, text=True).stdout
    assert "--asr" in help_text and help_text.startswith("usage: speech-eval [options]")
    assert "speech-eval score --ref REF --hyp HYP" in help_text
