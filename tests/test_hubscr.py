"""NIST's hubscr.pl beyond English (pipeline/scoring/hubscr.py): its Arabic example reproduced to every count of
its reports, and Arabic, Spanish and Italian files scored as Debian's hubscr.pl scores them, utterance by utterance."""
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.core import store
from pipeline.scoring import glm, hubscr
from tests.helpers import SCLITE, pralign_rows, utterance_counts
from tests.test_labels import lur_rows, same_as_lur
from tests.test_score_cli import score

ARABIC = Path(__file__).parent / "data" / "hubscr-arabic"
SCTK = Path(SCLITE).parent
needs_hubscr = pytest.mark.skipif(not (SCTK / "hubscr.pl").exists(), reason="Debian's sctk is not installed")
LENIENT = ("--optional-words", "--fragments")


def raw_rows(text: str) -> dict[str, list[int]]:
    """A .raw report's speaker rows: # Snt, # Wrd, Corr, Sub, Del, Ins, Err, S.Err, by speaker."""
    out = {}
    for line in text.splitlines():
        cells = line.replace("|", " ").split()
        if len(cells) == 9 and all(c.isdigit() for c in cells[1:]):
            out[cells[0]] = [int(c) for c in cells[1:]]
    return out


def ours_as_raw(out_dir: Path) -> dict[str, list[int]]:
    return {r["speaker"]: [int(r[c]) for c in ("n_utterances", "ref_words", "hits", "substitutions", "deletions",
                                               "insertions", "errors", "sentence_errors")]
            for r in store.read_csv(out_dir / "speakers.csv")}


def run_hubscr(folder: Path, lang: str, ref: str, hyp: str, *options: str) -> Path:
    """Debian's hubscr.pl on `folder`'s files (validation off, as -V turns it), its .pra's path."""
    env = {"PATH": f"{SCTK}:/usr/bin:/bin", "LC_ALL": "C"}
    subprocess.run([str(SCTK / "hubscr.pl"), "-V", *options, "-l", lang, "-g", "test.glm", "-h", "hub5", "-r", ref,
                    hyp], cwd=folder, env=env, check=True, capture_output=True, timeout=120)
    return folder / f"{hyp}.filt.pra"


def test_hubscr_pls_arabic_example_is_reproduced_to_every_count_of_its_reports(tmp_path):
    """SCTK's testArb (tests/data/hubscr-arabic/NOTICE): `hubscr.pl -V -H -T -d -l arabic`. Its GLM has a rule that
    fires only once the tanween are gone. Every count of its .raw, every utterance's of its .pra, every cell of its
    .lur, and the texts of the files it filtered."""
    proc = score("--ref", str(ARABIC / "test.arb2004.txt.stm"), "--hyp", str(ARABIC / "test.arb2004.txt.ctm"),
                 "--glm", str(ARABIC / "test.arb2004.glm"), "--language", "ar", "--hamza-norm", "--tanween-filter",
                 *LENIENT, "--normalize", "none", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    theirs, ours = raw_rows((ARABIC / "test.arb2004.txt.ctm.filt.raw").read_text()), ours_as_raw(tmp_path)
    assert theirs.pop("Sum") == [sum(column) for column in zip(*ours.values())] == [45, 218, 217, 0, 1, 0, 1, 1]
    assert ours == theirs
    pra = pralign_rows((ARABIC / "test.arb2004.txt.ctm.filt.pra").read_text())
    assert utterance_counts(tmp_path) == {uid: counts for uid, (counts, _, _) in pra.items()}
    lur = lur_rows((ARABIC / "test.arb2004.txt.ctm.filt.lur").read_text())
    blank = [name for name, cells in lur.items() if cells == [None]]  # a speaker of no word: no row in labels.csv
    assert blank == ["test.arb2004_A_inter_segment_gap", "test.arb2004_B_inter_segment_gap"]
    same_as_lur(store.read_csv(tmp_path / "labels.csv"), {k: v for k, v in lur.items() if k not in blank}, ["O"])
    assert "scored as NIST's hubscr.pl -l arabic -d -H -T scores: hamzaNorm.pl, then tanweenFilt.pl -a, then the " \
           "GLM" in proc.stdout
    filters = tuple(f.step for f in hubscr.FILTERS)
    flags = glm.Csrfilt(upcase=False)
    ref = glm.read(ARABIC / "test.arb2004.glm", "ref", "stm", flags, filters)
    theirs = [line.split(maxsplit=6)[6:] for line in (ARABIC / "test.arb2004.txt.stm.filt").read_text().splitlines()
              if not line.startswith(";;")]
    ours = [line.split(maxsplit=6)[6:] for line in (ARABIC / "test.arb2004.txt.stm").read_text().splitlines()
            if not line.startswith(";;")]
    assert len(theirs) == len(ours) == 45
    assert [[ref.filter(t[0])] if t else [] for t in ours] == theirs
    hyp = glm.read(ARABIC / "test.arb2004.glm", "hyp", "ctm", flags, filters)
    words = [line.split()[4] for line in (ARABIC / "test.arb2004.txt.ctm").read_text().splitlines()]
    filtered = [w for line in (ARABIC / "test.arb2004.txt.ctm.filt").read_text().splitlines()
                for w in line.split()[4:5]]
    assert " ".join(hyp.filter(w, padded=False) for w in words).split() == filtered


@needs_hubscr
@pytest.mark.parametrize("flags", [(), ("-H",), ("-T",)])
def test_the_arabic_example_counts_as_hubscr_pl_does_with_each_filter_or_none(tmp_path, flags):
    """Without the tanween filter the GLM's tanween rule does not fire, and without hamzaNorm the hesitations
    spelled with another alef stay words: each utterance's counts are Debian's hubscr.pl's."""
    for name in ("test.arb2004.txt.stm", "test.arb2004.txt.ctm"):
        shutil.copy(ARABIC / name, tmp_path / name)
    shutil.copy(ARABIC / "test.arb2004.glm", tmp_path / "test.glm")
    pra = run_hubscr(tmp_path, "arabic", "test.arb2004.txt.stm", "test.arb2004.txt.ctm", "-d", *flags)
    asked = [f.flag for f in hubscr.FILTERS if f.hubscr in flags]
    proc = score("--ref", str(tmp_path / "test.arb2004.txt.stm"), "--hyp", str(tmp_path / "test.arb2004.txt.ctm"),
                 "--glm", str(tmp_path / "test.glm"), "--language", "ar", *asked, *LENIENT, "--normalize", "none",
                 "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    theirs = {uid: counts for uid, (counts, _, _) in pralign_rows(pra.read_text()).items()}
    assert utterance_counts(tmp_path / "out") == theirs
    if not flags:
        assert sum(c[1] + c[2] + c[3] for c in theirs.values()) > 1  # the filters change what is counted


# Words of Latin-1's letters in every case, some a GLM rule takes only once csrfilt.sh -e has upper-cased them
LATIN = ["año", "Año", "AÑO", "él", "Él", "corazón", "CORAZÓN", "qué", "Qué", "niño", "über", "Über", "straße",
         "perché", "PERCHÉ", "Perché", "città", "eh", "Eh", "mm-hmm", "la", "LA", "de", "y", "größe", "ÿ"]
GLM = """;; a GLM in the Latin-1 letters of NIST's Spanish and German ones
* format = 'NIST1'
* copy_no_hit = 'T'
* case_sensitive = '{case_sensitive}'
AÑO => AÑOS / [ ] __ [ ]
CORAZÓN => CORAZON / [ ] __ [ ]
EH => %HESITACIÓN / [ ] __ [ ]
perché => PERCHE / [ ] __ [ ]
ÜBER => UEBER / [ ] __ [ ]
"""


def recased(rng: random.Random, word: str) -> str:
    """The word in another case, within Latin-1 (Python's upper() makes ß SS and ÿ Ÿ)."""
    how = rng.choice(["lower", "upper", "capitalize"])
    return "".join(c if c in "ßÿ" else getattr(c, "lower" if how == "lower" or how == "capitalize" and i else "upper")()
                   for i, c in enumerate(word))


def latin_files(rng: random.Random, folder: Path, case_sensitive: str = "F") -> None:
    """An stm of one conversation and a ctm of its hypothesis, in Latin-1 (for hubscr.pl, as NIST's texts were) and
    in UTF-8 (for score), with a GLM of accented rules (`case_sensitive`: its setting); the hypothesis has many
    words of the reference in another case."""
    stm, ctm = [], []
    for k in range(40):
        ref = [rng.choice(LATIN) for _ in range(rng.randint(1, 6))]
        if rng.random() < 0.3:
            ref.insert(rng.randrange(len(ref) + 1), f"({rng.choice(LATIN)})")
        hyp = [recased(rng, w.strip("()")) if rng.random() < 0.8 else rng.choice(LATIN)
               for w in ref if rng.random() < 0.9]
        hyp += [rng.choice(LATIN)] * (rng.random() < 0.2)
        stm.append(f"conv A spk{k % 3} {k}.000 {k + 1}.000 {' '.join(ref)}\n")
        ctm += [f"conv A {k + 0.1 * i + 0.05:.3f} 0.050 {w}\n" for i, w in enumerate(hyp)]
    rules = GLM.format(case_sensitive=case_sensitive)
    for name, text in (("ref.stm", "".join(stm)), ("hyp.ctm", "".join(ctm)), ("test.glm", rules)):
        (folder / name).write_text(text, encoding="latin-1")
        (folder / f"utf8.{name}").write_text(text, encoding="utf-8")


@needs_hubscr
@pytest.mark.parametrize("lang,code,seed,case_sensitive", [("spanish", "es", 1, "F"), ("spanish", "es", 2, "T"),
                                                            ("italian", "it", 3, "T"), ("italian", "it", 4, "F")])
def test_latin1_languages_count_as_hubscr_pl_does_on_the_latin1_files(tmp_path, lang, code, seed, case_sensitive):
    """Spanish upper-cases à-þ with csrfilt.sh -e, so `año` meets the GLM's `AÑO`; Italian upper-cases nothing
    (-s), so a case-sensitive GLM's `perché` meets `perché` alone, and sclite then folds A-Z alone (`PERCHÉ` and
    `perché` differ). Scored from the UTF-8 copies, every utterance's counts are hubscr.pl's on the Latin-1 files,
    whose texts English's flags would filter otherwise (and count otherwise in 13 to 24 of the 40 utterances, in
    three of the four cases, when this was written)."""
    latin_files(random.Random(seed), tmp_path, case_sensitive)
    pra = run_hubscr(tmp_path, lang, "ref.stm", "hyp.ctm")
    proc = score("--ref", str(tmp_path / "utf8.ref.stm"), "--hyp", str(tmp_path / "utf8.hyp.ctm"), "--glm",
                 str(tmp_path / "utf8.test.glm"), "--language", code, *LENIENT, "--normalize", "sclite", "--out",
                 str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    theirs = {uid: counts for uid, (counts, _, _) in pralign_rows(pra.read_bytes().decode("latin-1")).items()}
    assert utterance_counts(tmp_path / "out") == theirs
    assert f"scored as NIST's hubscr.pl -l {lang} scores" in proc.stdout
    which, texts = hubscr.LANGUAGES[code], [line.split(maxsplit=5)[5] for line in
                                            (tmp_path / "utf8.ref.stm").read_text().splitlines()]
    as_english, as_hubscr = (glm.read(tmp_path / "utf8.test.glm", "ref", "stm", flags)
                             for flags in (glm.Csrfilt(), glm.Csrfilt(which.upcase, which.extended)))
    assert sum(as_english.filter(t) != as_hubscr.filter(t) for t in texts) > len(texts) / 4


@pytest.mark.skipif(not (SCTK / "csrfilt.sh").exists(), reason="Debian's sctk is not installed")
@pytest.mark.parametrize("options", [("-e",), ("-s",), ("-s", "-e")])
def test_csrfilt_flags_filter_as_csrfilt_sh_does_a_latin1_file(tmp_path, options):
    """Every text through csrfilt.sh with the flags, on Latin-1 bytes, and through glm.Glm.filter on the UTF-8 text:
    the same text."""
    rng = random.Random(len(options))
    (tmp_path / "test.glm").write_text(GLM.format(case_sensitive="T"), encoding="latin-1")
    (tmp_path / "utf8.glm").write_text(GLM.format(case_sensitive="T"), encoding="utf-8")
    texts = [" ".join(rng.choice(LATIN) for _ in range(rng.randint(0, 8))) for _ in range(200)]
    trn = "".join(f"{t} (u_{i})\n" for i, t in enumerate(texts)).encode("latin-1")
    out = subprocess.run([str(SCTK / "csrfilt.sh"), *options, "-i", "trn", "-t", "ref", "-dh", "test.glm"],
                         input=trn, cwd=tmp_path, capture_output=True, check=True,
                         env={"PATH": f"{SCTK}:/usr/bin:/bin", "LC_ALL": "C"}).stdout.decode("latin-1")
    theirs = [line[:line.rindex("(")].strip() for line in out.splitlines()]
    rules = glm.read(tmp_path / "utf8.glm", "ref", "trn", glm.Csrfilt(upcase="-s" not in options,
                                                                      extended="-e" in options))
    assert [rules.filter(t) for t in texts] == theirs


def test_hubscr_filters_are_hamzanorm_and_tanweenfilt_a():
    """hamzaNorm.pl: an alef of any hamza bare at a word's start, not inside; tanweenFilt.pl -a: every tanween gone."""
    assert hubscr.hamza("أحمد إبن آمن سأل (أم) ا") == "احمد ابن امن سأل (أم) ا"
    assert hubscr.tanween("طبعاً كتابٌ بيتٍ") == "طبعا كتاب بيت"


@needs_hubscr
def test_the_filters_equal_sctks_scripts_on_random_arabic(tmp_path):
    rng = random.Random(5)
    letters = "\u0622\u0623\u0625\u0627\u0628\u062a\u0645\u064b\u064c\u064d\u0651 (%"
    lines = ["".join(rng.choice(letters) for _ in range(rng.randint(0, 30))) for _ in range(300)]
    text = "\n".join(lines) + "\n"
    for script, step in (("hamzaNorm.pl", hubscr.hamza), ("tanweenFilt.pl", hubscr.tanween)):
        args = [str(SCTK / script)] + ["-a"] * (step is hubscr.tanween) + ["--", "-", "-"]
        out = subprocess.run(["perl", *args], input=text.encode(), capture_output=True, check=True).stdout
        assert out.decode().split("\n")[:-1] == [step(line) for line in lines], script


@needs_hubscr
def test_nists_arabic_glm_filters_as_hubscr_pls_pipe_does(tmp_path):
    """NIST's ar20040907.glm (552 rules, and no max_nrules line: rfilter1 stops at rule 401, and `score` refuses it
    so, naming the fix) with the fix, on 300 texts of its own words: hamzaNorm.pl, tanweenFilt.pl -a and csrfilt.sh
    -s, piped as hubscr.pl pipes them, write each text as Glm.filter does."""
    nist = (ARABIC / "ar20040907.glm").read_text()
    with pytest.raises(ValueError, match="line 410: rule 401, past the file's max_nrules"):
        glm.read(ARABIC / "ar20040907.glm", "ref")
    lines = nist.splitlines(keepends=True)
    (tmp_path / "ar.glm").write_text("".join(lines[:4]) + "* max_nrules = '2500'\n" + "".join(lines[4:]))
    words = [w for line in lines if "=>" in line for side in line.split("/")[0].split("=>") for w in side.split()]
    rng = random.Random(6)
    texts = [" ".join(rng.choice(words + ["طبعاً", "كتابٌ", "إبن", "(%تردّد)"]) for _ in range(rng.randint(0, 8)))
             for _ in range(300)]
    trn = "".join(f"{t} (u_{i})\n" for i, t in enumerate(texts)).encode()
    pipe = "hamzaNorm.pl -- - - | tanweenFilt.pl -a -- - - | csrfilt.sh -s -i trn -t ref -dh ar.glm"
    out = subprocess.run(pipe, shell=True, input=trn, cwd=tmp_path, capture_output=True, check=True,
                         env={"PATH": f"{SCTK}:/usr/bin:/bin", "LC_ALL": "C"}).stdout.decode()
    theirs = [line[:line.rindex("(")].strip() for line in out.splitlines()]
    filters = tuple(f.step for f in hubscr.FILTERS)
    rules = glm.read(tmp_path / "ar.glm", "ref", "trn", glm.Csrfilt(upcase=False), filters)
    ours = [rules.filter(t) for t in texts]
    assert ours == theirs and sum(o != t for o, t in zip(ours, texts)) > 150


@pytest.mark.parametrize("code, normalizer, said", [
    ("ar", "none", "scored as NIST's hubscr.pl -l arabic -d scores: the GLM"),
    ("ar", "sclite", "here A-Z and a-z alike, where sclite -s tells them apart (--normalize none)"),
    ("it", "sclite", "scored as NIST's hubscr.pl -l italian scores: the GLM"),
    ("es-MX", "sclite", "scored as NIST's hubscr.pl -l spanish scores: the GLM"),
    ("it", "none", "here A-Z and a-z apart, where hubscr.pl's sclite takes them alike (--normalize sclite)"),
    ("de", "sclite", "German compound splitting (acomp.pl, with the LDC German lexicon) is not done here"),
    ("fr", "sclite", "(hubscr.pl, which has no -l for fr: its English's flags); NIST's hubscr.pl then scores"),
])
def test_the_last_line_says_which_hubscr_pl_call_the_scoring_equals_or_what_differs(tmp_path, code, normalizer,
                                                                                     said):
    (tmp_path / "ref.trn").write_text("Perché no (s_1)\n")
    (tmp_path / "hyp.trn").write_text("perché no (s_1)\n")
    (tmp_path / "test.glm").write_text(GLM.format(case_sensitive="F"))
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--glm",
                 str(tmp_path / "test.glm"), "--language", code, "--normalize", normalizer, *LENIENT, "--out",
                 str(tmp_path / "out"))
    assert proc.returncode == 0 and said in proc.stdout.splitlines()[-2], proc.stdout


def test_what_hubscr_pl_refuses_is_refused_naming_the_flag(tmp_path):
    (tmp_path / "ref.trn").write_text("طبعاً (a_1)\n")
    (tmp_path / "hyp.trn").write_text("طبعا (a_1)\n")
    (tmp_path / "test.glm").write_text(GLM.format(case_sensitive="F"))
    gb = "%嗯% => %HESITATION\n".encode("gb2312")  # a rule of NIST's Mandarin GLM, in its encoding
    (tmp_path / "gb.glm").write_bytes(GLM.format(case_sensitive="F").encode("utf-8") + gb)
    files = ("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--out", str(tmp_path / "o"))
    for args, said in (
            (("--tanween-filter", "--glm", str(tmp_path / "test.glm")), "--tanween-filter: hubscr.pl's -T "
                                                                        "(tanweenFilt.pl -a) is for Arabic alone"),
            (("--hamza-norm", "--language", "ar"), "--hamza-norm: hubscr.pl runs hamzaNorm.pl before csrfilt.sh "
                                                   "applies the GLM; give --glm FILE too"),
            (("--glm", str(tmp_path / "gb.glm")), "line 10: not UTF-8 (byte 0xe0")):
        proc = score(*files, *args)
        assert proc.returncode == 2 and said in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
    (tmp_path / "ref.stm").write_text("f A s 0.0 1.0 كتاب\n")
    (tmp_path / "hyp.ctm").write_text("f A 0.1 0.2 كتاب 0.9\nf A 0.4 0.2 \u064c 0.8\n")
    proc = score("--ref", str(tmp_path / "ref.stm"), "--hyp", str(tmp_path / "hyp.ctm"), "--glm",
                 str(tmp_path / "test.glm"), "--language", "ar", "--tanween-filter")
    assert proc.returncode == 2 and "hyp.ctm: line 2: nothing is left of the word" in proc.stderr, proc.stderr
    proc = score(*files, "--glm", str(tmp_path / "test.glm"), "--language", "ar", "--tanween-filter",
                 "--normalize", "none")
    assert proc.returncode == 0, proc.stderr
    assert store.read_csv(tmp_path / "o" / "utterances.csv")[0]["errors"] == "0"
