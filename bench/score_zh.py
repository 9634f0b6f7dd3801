"""seed-tts-eval's Chinese recipe at scale: `score --preset seed-tts-eval --language zh` against seed-tts-eval's own
scoring loop (its run_wer.py for lang zh: zhconv on each output, then process_one, jiwer's counts) on the same pairs.

    python bench/score_zh.py [--pairs 100000]

Pairs are 8-30 common characters with punctuation of both kinds, an ASCII word now and then, seeded
substitutions, deletions and insertions, and traditional characters in a tenth of the outputs. Each side runs as its
own process (wall time and peak RSS from os.wait4); ours also writes every file a scoring writes and draws its
bootstrap intervals, which theirs does not. The two macro CERs must agree: the table says whether they do. A third
process times FLOOR, the least a per-row loop of our steps costs in Python, to show where the floor lies."""
from __future__ import annotations

import argparse
import json
import random
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
    measures = jiwer.process_words(truth, hypo)  # jiwer 3's compute_measures
    ref_list = truth.split(" ")
    return raw_truth, raw_hypo, measures.wer, measures.substitutions / len(ref_list), \
        measures.deletions / len(ref_list), measures.insertions / len(ref_list)

refs = open(sys.argv[1], encoding="utf-8").read().splitlines()
hyps = open(sys.argv[2], encoding="utf-8").read().splitlines()
wers = []
with open(sys.argv[3], "w", encoding="utf-8") as out:
    for k, (ref, hyp) in enumerate(zip(refs, hyps)):
        hyp = zhconv.convert(hyp, 'zh-cn')
        raw_truth, raw_hypo, wer, subs, dele, inse = process_one(hyp, ref)
        out.write(f"u{k}\t{wer}\t{raw_truth}\t{raw_hypo}\t{inse}\t{dele}\t{subs}\n")
        wers.append(wer)
print(json.dumps({"macro": sum(wers) / len(wers)}))
'''

# The least a per-row Python loop of this tool's scoring can be: its normalizer, jiwer alignment, flags and character
# distance on each pair, its error and utterance rows written as plain tuples and one trn file; no records, no
# pralign, no confusion counts, no bootstrap. Not what `score` computes: where pure Python's floor lies beside theirs.
FLOOR = r'''
import csv, sys, zlib
from pipeline.scoring import normalize as norm
from pipeline.scoring.align import edits, jiwer_codes
from pipeline.scoring.flags import loops
from rapidfuzz.distance import Levenshtein
n = norm.for_language("seed-tts-eval", "zh")
rows = csv.writer(open("floor_u.csv", "w", newline="", encoding="utf-8"), lineterminator="\n")
errors = csv.writer(open("floor_e.csv", "w", newline="", encoding="utf-8"), lineterminator="\n")
trn = open("floor.trn", "w", encoding="utf-8")
total = 0.0
for k, (r, h) in enumerate(zip(open(sys.argv[1], encoding="utf-8"), open(sys.argv[2], encoding="utf-8"))):
    r, h = r.strip(), h.strip()
    rn, hn = n.reference(r), n.hypothesis(h)
    rw, hw = rn.split(), hn.split()
    c, = jiwer_codes([rw], [hw])
    s, d, i = c.count(1), c.count(2), c.count(3)
    looped = len(hn.encode()) / len(zlib.compress(hn.encode())) > 2.4 or loops(rw, hw)
    uid = f"line{k:05d}"
    for _, _, pos, code, a, b in list(edits(rw, hw, c))[:-1]:
        errors.writerow((uid, code, a or "", b or "", pos))
    ce = Levenshtein.distance(rn, hn)
    rows.writerow((uid, r, h, rn, hn, len(rw), s, d, i, round((s + d + i) / len(rw), 4), looped, ce, len(rn)))
    trn.write(f"{rn} ({uid})\n")
    total += (s + d + i) / len(rw)
print(total / (k + 1))
'''


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
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "ref.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
        (folder / "hyp.txt").write_text("\n".join(hyps) + "\n", encoding="utf-8")
        (folder / "theirs.py").write_text(THEIRS, encoding="utf-8")
        t_wall, t_mb, t_out = measure([sys.executable, "theirs.py", "ref.txt", "hyp.txt", "theirs.tsv"], folder)
        o_wall, o_mb, _ = measure([sys.executable, str(ROOT / "run_pipeline.py"), "score", "--ref", "ref.txt", "--hyp",
                                   "hyp.txt", "--preset", "seed-tts-eval", "--language", "zh", "--out", "out"], folder)
        (folder / "floor.py").write_text(FLOOR, encoding="utf-8")
        f_wall, f_mb, _ = measure([sys.executable, "floor.py", "ref.txt", "hyp.txt"], folder)
        theirs = json.loads(t_out.strip().splitlines()[-1])["macro"]
        ours = json.loads((folder / "out" / "summary.json").read_text())["groups"][0]["macro_wer"]
    equal = abs(ours - theirs) < 5e-5
    lines = [f"# seed-tts-eval's Chinese recipe at scale ({cpu_name()})", "",
             f"{args.pairs:,} pairs; each side its own process.", "",
             "| | wall s | peak MB | macro CER |", "|---|---|---|---|",
             f"| seed-tts-eval's loop (zhconv, process_one, jiwer) | {t_wall:.2f} | {t_mb:.0f} | {theirs:.6f} |",
             f"| `score --preset seed-tts-eval --language zh` (every file, bootstrap CIs) | {o_wall:.2f} | {o_mb:.0f} | "
             f"{ours:.6f} |",
             f"| the floor of a Python loop of our steps (no records, pralign, counts or bootstrap; not `score`) | "
             f"{f_wall:.2f} | {f_mb:.0f} | |", "",
             f"Ours / theirs: time {o_wall / t_wall:.2f}, memory {o_mb / t_mb:.2f}; macro CERs "
             f"{'equal' if equal else 'DIFFER'} (to 5e-5, the CSV's rounding). Goal: faster and in less memory: "
             f"{'met' if o_wall < t_wall and o_mb < t_mb else 'not met'}."]
    write_report("score_zh", lines, {"pairs": args.pairs, "theirs": [t_wall, t_mb, theirs],
                                     "ours": [o_wall, o_mb, ours], "floor": [f_wall, f_mb], "equal": equal})


if __name__ == "__main__":
    main()
