"""`listen create`: a listening test made from one or more runs, in one SQLite file (store.py).

Each run's clips are the audio its utterances heard in one condition (clean by default), one clip per voice and
sentence; the runs are read as compare-runs reads them (finished, and as they sealed their files). Beside the test
trials, the procedure of ITU-T P.808:
- a short training set that spans the quality range (a clip clean, in 10 dB and in -5 dB of noise), played first;
- gold trials with a known answer: a clean clip ("good") and the same in heavy noise ("bad"), made with the
  tool's own conditions, or the user's own (`--gold`);
- trapping trials, made with the tool's own TTS: a clip that breaks off into "This is an interruption. Please
  select the answer N.";
each kept with the answer it expects. What the listener's browser gets of a clip is an opaque id and its audio."""
from __future__ import annotations

import io
import json
import random
import sqlite3
from dataclasses import asdict, dataclass
from itertools import combinations
from pathlib import Path

import numpy as np

from pipeline.core import store as files
from pipeline.errors import InputError
from pipeline.io import audio, conditions
from pipeline.listen import store
from pipeline.listen.kinds import KINDS, Kind

NOISY, HEAVY = 10.0, -5.0  # dB SNR: the training set's middle and low, the bad gold's
TRAP_LEAD_S = 1.5  # of a real clip before the interruption
TRAINING = 3


@dataclass(frozen=True, kw_only=True)
class Options:
    name: str
    kind: str = "mos"
    votes_per_clip: int = 10  # P.808's figure
    trials_per_session: int = 20  # test trials a listener rates, besides training, gold and traps
    gold_per_session: int = 2
    # two of each: a listener who answers at random passes both traps and both golds about once in a hundred
    traps_per_session: int = 2
    sentences: int = 0  # at most this many sentences (0: all the runs share)
    condition: str = "clean"
    seed: int = 1337
    gold: str = ""  # the user's gold clips: a CSV of audio,expected (single-clip kinds)


@dataclass(frozen=True)
class Clip:
    role: str
    system: str
    run: str
    run_folder: str
    voice: str
    sentence_id: str
    utterance_id: str
    reference_text: str
    measures: dict
    samples: np.ndarray
    sr: int
    source_sha256: str = ""  # of the run's own file: a later comparison rates only audio that is still the same


def made(role: str, like: "Clip", samples: np.ndarray, sr: int | None = None) -> "Clip":
    """A clip the tool made (gold, trap, training, another voice): of no system, with no measures."""
    return Clip(role, "", "", "", "", like.sentence_id, "", "", {}, samples, sr or like.sr)


def wav_bytes(samples: np.ndarray, sr: int) -> bytes:
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, np.clip(samples, -1.0, 1.0), sr, subtype="PCM_16", format="WAV")
    return buf.getvalue()


def clips_of(runs: list, condition: str) -> dict[str, dict[str, Clip]]:
    """{system: {sentence id: clip}}: each run's voices in one condition, one clip per sentence (the engines of a
    run heard the same audio)."""
    out: dict[str, dict[str, Clip]] = {}
    for run in runs:
        voices = {u.voice for u in run.utterances}
        for u in run.utterances:
            if u.condition != condition or u.status != "ok" or not u.audio_path:
                continue
            system = run.name if len(voices) == 1 else f"{run.name}/{u.voice}"
            if u.sentence_id in out.get(system, {}):
                continue
            try:
                samples, sr = audio.read(run.audio(u.audio_path))
            except audio.BadAudio as e:
                raise InputError(f"{run.name}: {e}; the run's audio must be where its utterances.csv says") from None
            clip = Clip("test", system, run.name, str(run.folder.resolve()), u.voice, u.sentence_id, u.id,
                        u.reference, dict(u.measures), samples, sr, files.sha256_or_none(run.audio(u.audio_path)))
            out.setdefault(system, {})[u.sentence_id] = clip
            if u.speaker_reference:
                out.setdefault("\0references", {})[u.id] = made("reference", clip,
                                                                 *audio.read(run.audio(u.speaker_reference)))
    if not any(k != "\0references" for k in out):
        raise InputError(f"the runs have no utterance heard in condition {condition!r}; pick one they have with "
                         "--condition")
    return out


def create(out: str | Path, run_names: list[str], options: Options, results_dir: str = "results") -> str:
    """Make the test; returns its admin token (only its hash is kept)."""
    from pipeline.scoring import runs as scored

    kind = KINDS.get(options.kind)
    out = Path(out)
    if out.exists():
        raise InputError(f"{out}: exists; a listening test is made once (give another file, or remove it)")
    loaded = [scored.load(name, results_dir) for name in run_names]
    by = clips_of(loaded, options.condition)
    references = by.pop("\0references", {})
    systems = sorted(by)
    if kind.pair and len(systems) < 2:
        raise InputError(f"a {kind.name} test compares two versions of each sentence: give runs with two systems "
                         f"or more (these have {', '.join(systems)})")
    shared = sorted(set.intersection(*(set(c) for c in by.values()))) if kind.pair else \
        sorted(set().union(*(set(c) for c in by.values())))
    rng = random.Random(options.seed)
    if options.sentences and len(shared) > options.sentences:
        shared = sorted(rng.sample(shared, options.sentences))
    if not shared:
        raise InputError("the runs share no sentence; a comparison needs the same sentences in every system")
    admin = store.token()
    with files.atomic_path(out) as tmp:
        conn = store.connect(tmp, create=True)
        try:
            write(conn, kind, options, by, references, systems, shared, rng, admin, run_names)
        finally:
            conn.close()
        for suffix in ("-wal", "-shm"):
            Path(f"{tmp}{suffix}").unlink(missing_ok=True)
    return admin


def write(conn: sqlite3.Connection, kind: Kind, options: Options, by: dict, references: dict, systems: list[str],
          shared: list[str], rng: random.Random, admin: str, run_names: list[str]) -> None:
    import hashlib

    ids: set[str] = set()

    def put(clip: Clip) -> str:
        cid = store.token(12)
        ids.add(cid)
        data = wav_bytes(clip.samples, clip.sr)
        conn.execute("INSERT INTO clips VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                     (cid, clip.role, clip.system, clip.run, clip.run_folder, clip.voice, clip.sentence_id,
                      clip.utterance_id, clip.reference_text, clip.source_sha256, hashlib.sha256(data).hexdigest(),
                      round(len(clip.samples) / clip.sr, 3), json.dumps(clip.measures), data))
        return cid

    def trial(role: str, first: str, second: str | None, sentence: str, expected: int | None = None,
              swapped: bool | None = None) -> None:
        swap = (rng.random() < 0.5) if swapped is None and second is not None and kind.pair else bool(swapped)
        conn.execute("INSERT INTO trials VALUES (?,?,?,?,?,?,?)",
                     (store.token(12), role, first, second, int(swap), expected, sentence))

    def variant(clip: Clip, role: str, snr: float | None) -> Clip:
        samples = clip.samples if snr is None else conditions.apply(conditions.Condition("noise", snr), clip.samples,
                                                                    clip.sr, rng.randrange(1 << 30))
        return made(role, clip, samples)

    conn.execute("BEGIN")
    rated: dict[tuple[str, str], str] = {}
    for system in systems:
        for sentence in shared:
            if sentence in by[system]:
                rated[system, sentence] = put(by[system][sentence])
    reference_ids: dict[str, str] = {}
    if kind.reference:
        for system in systems:
            for sentence in shared:
                clip = by[system].get(sentence)
                ref = references.get(clip.utterance_id) if clip else None
                if clip and ref is None:
                    raise InputError(f"an smos test plays each clip beside its speaker reference: {clip.run}'s "
                                     f"{clip.utterance_id} has none (give the runs speaker references)")
                if ref is not None:
                    reference_ids[clip.utterance_id] = put(ref)
    for (system, sentence), cid in rated.items():
        if not kind.pair:
            ref = reference_ids.get(by[system][sentence].utterance_id) if kind.reference else None
            trial("test", ref or cid, cid if ref else None, sentence)
    if kind.pair:
        for sentence in shared:
            for a, b in combinations(systems, 2):
                trial("test", rated[a, sentence], rated[b, sentence], sentence)
    base = by[systems[0]][shared[0]]
    spare = by[systems[0]][shared[-1]]
    # a "good" gold is best a natural recording: the speaker reference (a cloning prompt) where the runs have one
    natural = references.get(base.utterance_id, base)
    gold_made = gold(kind, options, natural, spare, put, trial, variant)
    if not gold_made:
        raise InputError(f"a {kind.name} test needs gold trials: name them with --gold")
    traps(kind, options, [by[s][x] for s in systems for x in shared if x in by[s]], put, trial, rng)
    training(kind, base, put, trial, variant)
    settings = {**asdict(options), "runs": run_names, "systems": systems, "sentences": shared}
    conn.execute("INSERT INTO test VALUES (1,?,?,?,?,?,?,?)",
                 (options.name, kind.name, store.now(), options.votes_per_clip, options.trials_per_session,
                  store.hashed(admin), json.dumps(settings)))
    conn.execute("COMMIT")


def gold(kind: Kind, options: Options, base: Clip, spare: Clip, put, trial, variant) -> int:
    """Gold trials with their expected answers: the user's, or made from the run with the tool's conditions."""
    if options.gold:
        if kind.pair:
            raise InputError("--gold names single clips; a pair test's gold trials are made by the tool")
        import csv

        count = 0
        path = Path(options.gold)
        for n, row in enumerate(csv.DictReader(path.read_text(encoding="utf-8").splitlines()), 2):
            try:
                expected = int(row["expected"])
                samples, sr = audio.read(Path(path.parent, row["audio"]))
            except (KeyError, ValueError, audio.BadAudio) as e:
                raise InputError(f"--gold {path} line {n}: {e}; expected audio,expected columns") from None
            if expected not in kind.values:
                raise InputError(f"--gold {path} line {n}: {expected} is not an answer of {kind.name}")
            cid = put(Clip("gold", "", "", "", "", f"gold-{n}", "", "", {}, samples, sr))
            trial("gold", cid, None, f"gold-{n}", expected)
            count += 1
        return count
    clean, heavy = variant(base, "gold", None), variant(base, "gold", HEAVY)
    if kind.pair:
        trial("gold", put(clean), put(heavy), base.sentence_id, kind.good)
        trial("gold", put(variant(spare, "gold", None)), put(variant(spare, "gold", HEAVY)), spare.sentence_id,
              kind.good)
        return 2
    if kind.reference:
        from pipeline.tts import base as tts

        other = tts.load("espeak:en-us")
        samples, sr = other.synthesize(base.reference_text or "This is another voice.")
        reference = put(clean)
        trial("gold", reference, put(variant(base, "gold", None)), base.sentence_id, kind.good)
        trial("gold", reference, put(made("gold", base, samples, sr)),
              base.sentence_id, kind.bad)
        return 2
    trial("gold", put(clean), None, base.sentence_id, kind.good)
    trial("gold", put(heavy), None, base.sentence_id, kind.bad)
    return 2


def traps(kind: Kind, options: Options, pool: list[Clip], put, trial, rng: random.Random) -> None:
    """Trapping trials: a real clip that breaks off into the tool's own voice asking for one answer."""
    from pipeline.tts import base as tts

    voice = tts.load("piper:joe")
    for n in range(max(1, options.traps_per_session) * 2):
        clip = pool[rng.randrange(len(pool))]
        answer = rng.choice([v for v in kind.values if v != 0] or list(kind.values))
        said = str(answer) if not kind.pair else kind.label(answer).lower()
        message, sr = voice.synthesize(f"This is an interruption. Please select the answer {said}.")
        lead = clip.samples[:int(TRAP_LEAD_S * clip.sr)]
        samples = np.concatenate([lead, np.zeros(clip.sr // 4, np.float32), audio.resample(message, sr, clip.sr)])
        trapped = put(made("trap", clip, samples))
        if kind.pair or kind.reference:
            trial("trap", put(made("trap", clip, clip.samples)), trapped,
                  clip.sentence_id, answer, swapped=False)
        else:
            trial("trap", trapped, None, clip.sentence_id, answer)


def training(kind: Kind, base: Clip, put, trial, variant) -> None:
    """The training set: the quality range, clean to heavy noise, rated first and never analysed."""
    levels = (None, NOISY, HEAVY)
    if kind.pair or kind.reference:
        first = put(variant(base, "training", None))
        for snr in levels:
            trial("training", first, put(variant(base, "training", snr)), base.sentence_id, swapped=False)
    else:
        for snr in levels:
            trial("training", put(variant(base, "training", snr)), None, base.sentence_id)



def summary(path: str | Path) -> str:
    """One line: what the test holds."""
    conn = store.connect(path)
    try:
        test = store.Test.read(conn)
        roles = dict(conn.execute("SELECT role, count(*) FROM trials GROUP BY role").fetchall())
    finally:
        conn.close()
    systems = test.settings["systems"]
    return (f"a {test.kind.upper()} test of {len(systems)} system(s) ({', '.join(systems)}) on "
            f"{len(test.settings['sentences'])} sentences: {roles.get('test', 0)} test trials, {roles.get('gold', 0)} "
            f"gold, {roles.get('trap', 0)} trapping, {roles.get('training', 0)} training; {test.votes_per_clip} votes "
            f"asked for each test trial, {test.trials_per_session} a session, so about "
            f"{-(-roles.get('test', 0) * test.votes_per_clip // max(1, test.trials_per_session))} listener sessions")
