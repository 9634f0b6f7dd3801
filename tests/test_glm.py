"""A GLM applied as sctk's csrfilt.sh applies it (pipeline/scoring/glm.py): every text against csrfilt.sh's output,
on NIST-style rules and on random rules written every way rfilter1 reads them."""
from __future__ import annotations

import hashlib
import os
import random
import re
import subprocess
from pathlib import Path

import pytest

from pipeline.scoring import glm
from tests.helpers import SCLITE

CSRFILT = Path(SCLITE).parent / "csrfilt.sh"
pytestmark = pytest.mark.skipif(not CSRFILT.exists(), reason="sctk's csrfilt.sh is not installed (apt install sctk)")

# In the style of NIST's English GLMs (sctk doc/trans_rules/en20090415.glm): backchannels and hesitations in
# context, spellings, compounds, and a hypothesis-only section expanding contractions into alternations.
NIST_STYLE = """\
;;  File: test.glm
;;  Desc: rules in the forms NIST's GLMs write them
* name "test.glm"
* desc "The Global Mapping File for testing"
* format = 'NIST1'
* max_nrules = '2500'
* copy_no_hit = 'T'
* case_sensitive = 'F'

;;  Backchannel Mappings
UH-HUH  =>  %BCACK     / [ ] __ [ ] ;; affirmative token
MHM     =>  %BCACK     / [ ] __ [ ]
HUH-UH  =>  %BCNACK    / [ ] __ [ ]
UH      =>  %HESITATION / [ ] __ [ ]
UM      =>  %HESITATION / [ ] __ [ ]
(UH)    =>  (%HESITATION)
COLOUR  =>  COLOR      / [ ] __ [ ]
GONNA   =>  GOING TO   / [ ] __ [ ]
AIN'T   => [{ARE NOT / HAVE NOT}] / [ ] __ [ ]
OK      =>  OKAY       / [ ] __ [ ]
[  ] => [ ] ;; two spaces made one
;; INPUT_DEPENDENT_APPLICATION = "hyp"
[SHE'S] => [{SHE'S / SHE IS / SHE HAS}] / [ ] __ [ ]
[FIRM'S] => [{FIRM'S / FIRM IS / FIRM HAS}] / [ ] __ [ ]
;; INPUT_DEPENDENT_APPLICATION = "ref|trn"
MM-HMM  =>  %BCACK     / [ ] __ [ ]
"""
WORDS = ["uh-huh", "mhm", "huh-uh", "uh", "um", "colour", "gonna", "ain't", "ok", "she's", "firm's", "mm-hmm",
         "x-ray", "well-known", "th-", "-ing", "a", "the", "go", "going", "to", "café", "Ob", "oB", "ab", "ba", "b"]


def csrfilt(glm_path: Path, side: str, texts: list[str]) -> list[str]:
    """csrfilt.sh -i trn -t SIDE -dh GLM on `texts` as trn lines: each line's text."""
    trn = "".join(f"{t} (u_{i})\n" for i, t in enumerate(texts))
    env = {**os.environ, "PATH": f"{CSRFILT.parent}:{os.environ['PATH']}"}
    out = subprocess.run([str(CSRFILT), "-i", "trn", "-t", side, "-dh", str(glm_path)], input=trn.encode(),
                         capture_output=True, env=env, check=True).stdout.decode()
    lines = out.splitlines()
    assert len(lines) == len(texts), out
    return [line[:line.rindex("(")].strip() for line in lines]


def random_text(rng: random.Random) -> str:
    words = []
    for _ in range(rng.randint(0, 9)):
        word = rng.choice(WORDS)
        word = rng.choice([word, word.upper(), word.capitalize()])
        if rng.random() < 0.15:
            word = f"({word}" + "".join(f" {rng.choice(WORDS)}" for _ in range(rng.randint(0, 2))) + ")"
        words.append(word)
    return rng.choice([" ", "  ", "\t", " \t "]).join(words)


def random_glm(rng: random.Random) -> str:
    """Rules of the words above and pieces of them, written in every way rfilter1 reads: bare, in `[ ]` or `" "`,
    with or without a context on either side, a comment after, a `/` in the output, spaces left out."""
    def piece() -> str:
        word = rng.choice(WORDS).upper()
        if rng.random() < 0.3:
            start = rng.randrange(len(word))
            return word[start:start + rng.randint(1, 3)]
        return word if rng.random() < 0.7 else f"{word} {rng.choice(WORDS).upper()}"

    def field(text: str) -> str:
        return rng.choice([text, f"[{text}]", f'"{text}"', f"[ {text} ]"])

    lines = [rng.choice([";;  a random GLM", ";; x", "## rules", "# rules"]), "* format = 'NIST1'",
             f"* copy_no_hit = '{rng.choice(['T', 'yes', 'true'])}'",
             f"* case_sensitive = \"{rng.choice(['T', 'F', 'F'])}\"", "* max_nrules = '100'"]
    for _ in range(rng.randint(1, 25)):
        target = rng.choice([piece(), "", f"{{{piece()} / {piece()}}}", f"[{{{piece()} / {piece()}}}]", "%BCACK"])
        rule = f"{field(piece())} {rng.choice(['=>', ' => ', '=>  '])} {field(target) if target else ''}"
        context = rng.random()
        if context < 0.4:
            rule += " / [ ] __ [ ]"
        elif context < 0.55:
            rule += f" / {field(piece())} __"
        elif context < 0.7:
            rule += f" / __ {field(rng.choice([' ', piece()]))}"
        if rng.random() < 0.2:
            rule += f" {lines[0].split()[0]} a comment"
        lines.append(rule)
        if rng.random() < 0.05 and lines[0].startswith(";;"):  # elsewhere rfilter1 reads the line as a rule
            lines.append(f';; INPUT_DEPENDENT_APPLICATION = "{rng.choice(["hyp", "ref", "trn", "ctm"])}"')
    return "\n".join(lines) + "\n"


def test_nist_style_rules_filter_each_side_as_csrfilt_does(tmp_path):
    path = tmp_path / "test.glm"
    path.write_text(NIST_STYLE)
    rng = random.Random(1)
    texts = ["we are gonna go to the firm's office uh-huh", "she's (uh) a well-known (th-) x-ray",
             "ain't it mhm colour", "", "huh-uh (um hmm) ok", "mm-hmm  OK\tok", "café-crème Mhm",
             *(random_text(rng) for _ in range(300))]
    for side in glm.SIDES:
        rules = glm.read(path, side)
        assert [rules.filter(t) for t in texts] == csrfilt(path, side, texts)
    hyp = glm.read(path, "hyp")
    assert hyp.filter("she's gonna") == "{SHE'S / SHE IS / SHE HAS} GOING TO"  # the section's alternation
    assert glm.read(path, "ref").filter("she's gonna") == "SHE'S GOING TO"


@pytest.mark.parametrize("seed", range(12))
def test_random_rules_written_every_way_filter_as_csrfilt_does(tmp_path, seed):
    rng = random.Random(seed)
    path = tmp_path / "random.glm"
    path.write_text(random_glm(rng))
    texts = [random_text(rng) for _ in range(150)]
    for side in glm.SIDES:
        rules = glm.read(path, side)
        assert [rules.filter(t) for t in texts] == csrfilt(path, side, texts), path.read_text()


def test_what_csrfilt_refuses_is_refused_with_the_reason(tmp_path):
    path = tmp_path / "test.glm"
    path.write_text(NIST_STYLE)
    rules = glm.read(path, "ref")
    for text in ["a (b", "a b)", "((a) b)", "(a (b) c)", "a ) (b"]:
        with pytest.raises(ValueError, match="parentheses"):
            rules.filter(text)
        env = {**os.environ, "PATH": f"{CSRFILT.parent}:{os.environ['PATH']}"}
        refused = subprocess.run([str(CSRFILT), "-i", "trn", "-t", "ref", str(path)], input=f"{text} (u_1)\n".encode(),
                                 capture_output=True, env=env)
        assert refused.returncode == 1 and b"optional deletion" in refused.stdout
    for body, reason in [("A B\n", "no `=>`"), ("  ;; indented\n", "comment"), ("* name = x\n", "quoted"),
                         ("* format = 'NIST2'\nA => B\n", "NIST1"), ("* copy_no_hit = 'F'\nA => B\n", "one line"),
                         ("A => B\n" * 401, "max_nrules"),
                         ("A => " + "B" * 140 + "\n", "131")]:
        path.write_text(";; a GLM\n" + body)
        with pytest.raises(ValueError, match=reason):
            glm.read(path, "ref")


def test_score_with_a_glm_counts_as_hubscr_does_with_csrfilt_and_sclite(tmp_path):
    """hubscr.pl's way with trn files: each side through csrfilt.sh (-t ref, -t hyp), then sclite -D -F. `score
    --glm` on the files as given counts every utterance as it does, and reads the same ways of the alternations
    the GLM writes into hypotheses."""
    from tests.helpers import sclite_pralign
    from tests.test_score_cli import score
    from pipeline.core import store

    path = tmp_path / "test.glm"
    path.write_text(NIST_STYLE)
    rng = random.Random(3)
    pairs = []
    while len(pairs) < 400:
        reference = random_text(rng)
        if re.search(r"\([^)]*ain't", reference, re.IGNORECASE):
            continue  # the GLM writes an alternation inside parentheses, which sclite's reader crashes on
        said = [w for w in reference.replace("(", " ").replace(")", " ").split() if rng.random() > 0.15]
        hypothesis = [rng.choice(WORDS) if rng.random() < 0.15 else w for w in said] + rng.choice([[], ["uh"]])
        pairs.append((f"spk_u{len(pairs):04d}", reference, " ".join(hypothesis)))
    (tmp_path / "ref.trn").write_text("".join(f"{r} ({u})\n" for u, r, _ in pairs))
    (tmp_path / "hyp.trn").write_text("".join(f"{h} ({u})\n" for u, _, h in pairs))
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--glm", str(path),
                 "--normalize", "sclite", "--optional-words", "--fragments", "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    assert f"scored as NIST's hubscr.pl -l english scores: the GLM {path} (sha256 {digest}) applied" in proc.stdout
    ours = {r["id"]: r for r in store.read_csv(tmp_path / "out" / "utterances.csv")}

    nist = tmp_path / "nist"
    nist.mkdir()
    filtered = {side: csrfilt(path, side, [r if side == "ref" else h for _, r, h in pairs]) for side in glm.SIDES}
    for side in glm.SIDES:
        (nist / f"{side}.trn").write_text("".join(f"{t} ({u})\n" for (u, _, _), t in zip(pairs, filtered[side])))
    theirs = sclite_pralign(nist, "-D", "-F")
    assert {u: tuple(int(r[k]) for k in ("hits", "substitutions", "deletions", "insertions"))
            for u, r in ours.items()} == {u: c for u, (c, _, _) in theirs.items()}
    heard = [u for (u, _, _), h in zip(pairs, filtered["hyp"]) if "{" in h]
    assert len(heard) > 20  # hypotheses the GLM gave alternations
    for uid in heard:
        assert ours[uid]["hypothesis"].lower().split() == [w.lower() for w in theirs[uid][2] if set(w) != {"*"}]


def test_a_glm_score_cannot_take_is_refused_naming_the_flag_and_the_way(tmp_path):
    from tests.test_score_cli import score

    files = {"ref.txt": "a b\n", "hyp.txt": "a b\n", "ref.trn": "a b (s_1)\n", "hyp.trn": "a ( b (s_1)\n",
             "ref.stm": "f 1 s 0.0 1.0 a b\n", "hyp.ctm": "f 1 0.1 0.2 a\n", "good.glm": NIST_STYLE,
             "bad.glm": ";; a GLM\nA B\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    at = {name: str(tmp_path / name) for name in [*files, "missing.glm"]}
    for ref, hyp, glm_file, more, says in [
        ("ref.trn", "hyp.trn", "missing.glm", (), "cannot read it"),
        ("ref.trn", "hyp.trn", "bad.glm", (), "bad.glm: line 2: 'A B' has no `=>`"),
        ("ref.txt", "hyp.txt", "good.glm", (), "give both as trn"),
        ("ref.trn", "hyp.trn", "good.glm", (), "hyp.trn: utterance s_1: 'a ( b': parentheses nested or unpaired"),
        ("ref.trn", "hyp.trn", "good.glm", ("--preset", "seed-tts-eval"), "leave out one or the other"),
        ("ref.stm", "hyp.ctm", "bad.glm", (), "bad.glm: line 2"),
    ]:
        proc = score("--ref", at[ref], "--hyp", at[hyp], "--glm", at[glm_file], *more, "--out", str(tmp_path / "out"))
        assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_pairs_filtered_and_resolved_on_several_workers_are_those_of_one(tmp_path):
    """resolve_all gives the workers a chunk of pairs at a time: with 1,300 pairs (three chunks) every file is the
    same for one worker and two, and where two utterances cannot be filtered, the first in the file is named, on
    either."""
    from tests.test_score_cli import score

    (tmp_path / "test.glm").write_text(NIST_STYLE)
    rng = random.Random(8)
    refs = [random_text(rng) or "ok" for _ in range(1300)]
    hyps = [" ".join(w for w in t.replace("(", "").replace(")", "").split() if rng.random() > 0.2) for t in refs]
    for name, texts in (("ref", refs), ("hyp", hyps)):
        (tmp_path / f"{name}.trn").write_text("".join(f"{t} (s_{k})\n" for k, t in enumerate(texts)))
    files = {}
    for workers in ("1", "2"):
        out = tmp_path / f"out{workers}"
        proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--glm",
                     str(tmp_path / "test.glm"), "--normalize", "sclite", "--optional-words", "--fragments",
                     "--workers", workers, "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        files[workers] = {f.name: f.read_bytes() for f in out.iterdir() if f.name != "summary.json"}
    assert files["1"] == files["2"]
    assert sum("she's" in h.lower() for h in hyps) > 50 and b"{" not in files["1"]["hyp.trn"]  # the GLM's
    # alternations of the contractions, each resolved into the way read
    hyps[1250], hyps[700] = "a ( b", "c ) d"
    (tmp_path / "hyp.trn").write_text("".join(f"{t} (s_{k})\n" for k, t in enumerate(hyps)))
    for workers in ("1", "2"):
        proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--glm",
                     str(tmp_path / "test.glm"), "--workers", workers, "--out", str(tmp_path / "bad"))
        assert proc.returncode == 2 and "utterance s_700: 'c ) d': parentheses" in proc.stderr, proc.stderr


@pytest.mark.parametrize("seed, confident", [(1, False), (2, False), (3, True)])
def test_stm_and_ctm_files_with_a_glm_count_as_hubscr_does_with_csrfilt_and_sclite(tmp_path, seed, confident):
    """hubscr.pl's way with an stm and a ctm: csrfilt.sh -i stm -t ref and -i ctm -t hyp, then sclite -D -F. A ctm
    word the GLM rewrites into several shares its time as csrfilt shares it, and one it rewrites into an alternation
    is placed by its ways' latest midpoint, as sclite places csrfilt's <ALT_BEGIN> block: the segments take the same
    words, and every utterance counts as sclite counts it. `confident`: every word has a confidence, which each word
    csrfilt writes for it keeps, and the NCE is sclite's."""
    from tests.test_score_cli import score
    from pipeline.core import store

    rng = random.Random(seed)
    path = tmp_path / "test.glm"
    path.write_text(NIST_STYLE.replace("[  ] => [ ] ;; two spaces made one\n", ""))  # csrfilt's stm output would
    # lose the space between a segment's times and its text, and sclite read the first word as a time
    words = [w for w in WORDS if not w.startswith("-")]
    stm_lines, ctm_lines = [], []
    for channel in "ab":
        t = 0.0
        for _ in range(rng.randint(4, 10)):
            start = t + rng.choice([0, 0.5])
            t = start + rng.randint(4, 12) / 4
            text = re.sub("ain't", "gonna", random_text(rng), flags=re.IGNORECASE) or "the"  # not in parentheses:
            # the GLM would write an alternation inside them, which sclite's reader crashes on
            stm_lines.append(f"f1 {channel} s{channel} {start:.2f} {t:.2f} {text}\n")
        for start in sorted(round(rng.uniform(0, t + 1), 2) for _ in range(rng.randint(10, 40))):
            duration = rng.randint(5, 60) / 100
            confidence = f" {rng.random():.3f}" if confident else rng.choice(["", " 0.9"])
            ctm_lines.append(f"f1 {channel} {start:.2f} {duration:.2f} {rng.choice(words)}{confidence}\n")
    (tmp_path / "ref.stm").write_text("".join(stm_lines))
    (tmp_path / "hyp.ctm").write_text("".join(ctm_lines))
    proc = score("--ref", str(tmp_path / "ref.stm"), "--hyp", str(tmp_path / "hyp.ctm"), "--glm", str(path),
                 "--normalize", "sclite", "--optional-words", "--fragments", "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    ours = {r["id"]: r for r in store.read_csv(tmp_path / "out" / "utterances.csv")}

    env = {**os.environ, "PATH": f"{CSRFILT.parent}:{os.environ['PATH']}"}
    for name, fmt, side in (("ref.stm", "stm", "ref"), ("hyp.ctm", "ctm", "hyp")):
        filtered = subprocess.run([str(CSRFILT), "-i", fmt, "-t", side, "-dh", str(path)],
                                  input=(tmp_path / name).read_bytes(), capture_output=True, env=env, check=True)
        (tmp_path / f"nist.{fmt}").write_bytes(filtered.stdout)
    assert b"<ALT_BEGIN>" in (tmp_path / "nist.ctm").read_bytes()
    pralign = subprocess.run([SCLITE, "-r", "nist.stm", "stm", "-h", "nist.ctm", "ctm", "-D", "-F", "-o", "pralign",
                              "stdout"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    from tests.helpers import pralign_rows
    theirs = pralign_rows(pralign)
    assert len(ours) > 6
    assert {u: tuple(int(r[k]) for k in ("hits", "substitutions", "deletions", "insertions"))
            for u, r in ours.items()} == {u: c for u, (c, _, _) in theirs.items()}
    for uid, row in ours.items():
        assert row["hypothesis"].lower().split() == [w.lower() for w in theirs[uid][2] if set(w) != {"*"}]
    if confident:
        from tests.helpers import assert_nce_as_sclites, sclite_nce
        summed = subprocess.run([SCLITE, "-r", "nist.stm", "stm", "-h", "nist.ctm", "ctm", "-D", "-F", "-o", "sum",
                                 "stdout"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
        assert_nce_as_sclites(tmp_path / "out", sclite_nce(summed))
    else:
        assert not (tmp_path / "out" / "confidence.csv").exists()
