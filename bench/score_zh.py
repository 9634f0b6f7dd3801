"""seed-tts-eval's Chinese recipe at scale: `score --preset seed-tts-eval --language zh` against seed-tts-eval's own
scoring loop (its run_wer.py for lang zh: zhconv on each output, then process_one, jiwer's compute_measures) on the
same pairs.

    python bench/score_zh.py [--pairs 100000]

Pairs are 8-30 common characters with punctuation of both kinds, an ASCII word now and then, seeded
substitutions, deletions and insertions, and traditional characters in a tenth of the outputs. Each side runs as its
own process (wall time and peak RSS from os.wait4). Theirs runs as written, on jiwer 3 (its `compute_measures`,
which jiwer 4 removed): a jiwer<4 wheel is fetched into bench/wheels/ once; without a network, on jiwer 4's
`process_words`, which gives the same counts, and the table says so. Ours runs twice: as `score` runs by default,
writing every file it writes and drawing its bootstrap intervals, which theirs does not; then writing what theirs
writes (a table of per-utterance rates, and the mean: `--outputs utterances.csv --bootstrap 0`). The macro CERs must
agree: the table says whether they do."""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from common import ROOT, cpu_name, measure, write_report

COMMON = ("的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定"
          "行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前"
          "外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很")
TRADITIONAL = {"这": "這", "们": "們", "为": "為", "国": "國", "时": "時", "来": "來", "说": "說", "学": "學", "对": "對",
               "发": "發", "现": "現", "实": "實", "动": "動", "经": "經", "过": "過", "还": "還", "没": "沒", "问": "問"}
PUNCTUATION = "，。！？、：；“”（）,.!?"
THEIRS = r'''
import string, sys, json
import jiwer, zhconv
from zhon.hanzi import punctuation
punctuation_all = punctuation + string.punctuation
if hasattr(jiwer, "compute_measures"):  # jiwer 3, which seed-tts-eval's code calls
    compute_measures = jiwer.compute_measures
else:  # jiwer 4: the same counts from process_words, which compute_measures called
    def compute_measures(truth, hypo):
        m = jiwer.process_words(truth, hypo)
        return {"wer": m.wer, "substitutions": m.substitutions, "deletions": m.deletions, "insertions": m.insertions}

def process_one(hypo, truth):  # seed-tts-eval's run_wer.py, lang == "zh"
    raw_truth, raw_hypo = truth, hypo
    for x in punctuation_all:
        if x == '\'':
            continue
        truth = truth.replace(x, '')
        hypo = hypo.replace(x, '')
    truth = truth.replace('  ', ' ')
    hypo = hypo.replace('  ', ' ')
    truth = " ".join([x for x in truth])
    hypo = " ".join([x for x in hypo])
    measures = compute_measures(truth, hypo)
    ref_list = truth.split(" ")
    return raw_truth, raw_hypo, measures["wer"], measures["substitutions"] / len(ref_list), \
        measures["deletions"] / len(ref_list), measures["insertions"] / len(ref_list)

refs = open(sys.argv[1], encoding="utf-8").read().splitlines()
hyps = open(sys.argv[2], encoding="utf-8").read().splitlines()
wers = []
with open(sys.argv[3], "w", encoding="utf-8") as out:
    for k, (ref, hyp) in enumerate(zip(refs, hyps)):
        hyp = zhconv.convert(hyp, 'zh-cn')
        raw_truth, raw_hypo, wer, subs, dele, inse = process_one(hyp, ref)
        out.write(f"u{k}\t{wer}\t{raw_truth}\t{raw_hypo}\t{inse}\t{dele}\t{subs}\n")
        wers.append(wer)
print(json.dumps({"macro": sum(wers) / len(wers), "jiwer": jiwer.__version__ if hasattr(jiwer, "__version__")
                  else "3" if hasattr(jiwer, "compute_measures") else "4"}))
'''

WHEELS = Path(__file__).resolve().parent / "wheels"


def jiwer_3() -> Path | None:
    """A jiwer<4 wheel for their loop (pure Python: importable from the wheel on PYTHONPATH), fetched once."""
    found = sorted(WHEELS.glob("jiwer-3.*-py3-none-any.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--timeout", "10",
                        "--retries", "1", "jiwer>=3,<4", "-d", str(WHEELS)], capture_output=True)
        found = sorted(WHEELS.glob("jiwer-3.*-py3-none-any.whl"))
    return found[-1] if found else None


def make_pairs(n: int, seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    refs, hyps = [], []
    for _ in range(n):
        chars = [rng.choice(COMMON) for _ in range(rng.randint(8, 30))]
        if rng.random() < 0.2:
            chars.insert(rng.randrange(len(chars)), rng.choice(["GPT", "iPhone", "OK", "5G", "AI"]))
        out = []
        for c in chars:
            r = rng.random()
            if r < 0.03:
                continue
            out.append(rng.choice(COMMON) if r < 0.06 else c)
            if rng.random() < 0.02:
                out.append(rng.choice(COMMON))
        if rng.random() < 0.1:
            out = [TRADITIONAL.get(c, c) for c in out]
        ref = "".join(chars[:len(chars) // 2]) + rng.choice(PUNCTUATION) + "".join(chars[len(chars) // 2:]) + "。"
        refs.append(ref)
        hyps.append("".join(out))
    return refs, hyps


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=1337)
    args = p.parse_args()
    refs, hyps = make_pairs(args.pairs, args.seed)
    wheel = jiwer_3()
    score = [sys.executable, str(ROOT / "run_pipeline.py"), "score", "--ref", "ref.txt", "--hyp", "hyp.txt",
             "--preset", "seed-tts-eval", "--language", "zh"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "ref.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
        (folder / "hyp.txt").write_text("\n".join(hyps) + "\n", encoding="utf-8")
        (folder / "theirs.py").write_text(THEIRS, encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(wheel)} if wheel else None
        t_wall, t_mb, t_out = measure([sys.executable, "theirs.py", "ref.txt", "hyp.txt", "theirs.tsv"], folder, env)
        o_wall, o_mb, _ = measure([*score, "--out", "all"], folder)
        same_outputs = ["--outputs", "utterances.csv", "--bootstrap", "0"]
        s_wall, s_mb, _ = measure([*score, "--out", "same", *same_outputs, "--workers", "1"], folder)
        c_wall, c_mb, _ = measure([*score, "--out", "cores", *same_outputs], folder)
        theirs = json.loads(t_out.strip().splitlines()[-1])
        ours, same, cores = (json.loads((folder / d / "summary.json").read_text())["groups"][0]["macro_wer"]
                             for d in ("all", "same", "cores"))
    equal = abs(ours - theirs["macro"]) < 5e-5 and ours == same == cores
    on = f"jiwer {theirs['jiwer']}'s compute_measures" if wheel else "jiwer 4's process_words: no jiwer<4 to be had"
    met = s_wall < t_wall and s_mb < t_mb
    lines = [f"# seed-tts-eval's Chinese recipe at scale ({cpu_name()})", "",
             f"{args.pairs:,} pairs; each side its own process.", "",
             "| | wall s | peak MB | macro CER |", "|---|---|---|---|",
             f"| seed-tts-eval's loop (zhconv, process_one, {on}) | {t_wall:.2f} | {t_mb:.0f} | "
             f"{theirs['macro']:.6f} |",
             f"| `score --preset seed-tts-eval --language zh` (every file, bootstrap CIs, every core) | "
             f"{o_wall:.2f} | {o_mb:.0f} | {ours:.6f} |",
             f"| the same, writing what theirs writes in one process as theirs (`--outputs utterances.csv "
             f"--bootstrap 0 --workers 1`) | {s_wall:.2f} | {s_mb:.0f} | {same:.6f} |",
             f"| the same on every core (no `--workers`) | {c_wall:.2f} | {c_mb:.0f} | {cores:.6f} |", "",
             f"Ours / theirs, writing what theirs writes in one process: time {s_wall / t_wall:.2f}, memory "
             f"{s_mb / t_mb:.2f} (goal: faster and in less memory: {'met' if met else 'not met'}); on every core: "
             f"time {c_wall / t_wall:.2f}; writing every file with CIs: time {o_wall / t_wall:.2f}, memory "
             f"{o_mb / t_mb:.2f}. Peak MB is the largest process's. Macro CERs {'equal' if equal else 'DIFFER'} (to "
             "5e-5, the CSV's rounding)."]
    write_report("score_zh", lines, {"pairs": args.pairs, "theirs": [t_wall, t_mb, theirs["macro"], on],
                                     "ours": [o_wall, o_mb, ours], "same_outputs": [s_wall, s_mb, same],
                                     "same_outputs_every_core": [c_wall, c_mb, cores],
                                     "equal": equal})


if __name__ == "__main__":
    main()
