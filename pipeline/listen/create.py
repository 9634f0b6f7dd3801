"""`listen create`: a listening test made from one or more runs, in one SQLite file (database.py).

Each run's clips are the audio its utterances heard in a condition (clean by default), one clip per voice and
sentence; the runs are read as compare-runs reads them (finished, and as they sealed their files). Given several
conditions (`--condition clean,noise:snr=10,noise:snr=0`), each voice in each condition is a system of its own,
`v1 @ noise:snr=10`, rated on the very audio the runs' engines heard in it. Beside the test
trials, the procedure of ITU-T P.808:
- a short training set that spans the quality range (a clip clean, in 10 dB and in -5 dB of noise), played first;
- gold trials with a known answer: a "good" one only where the answer is known, a natural recording (the runs'
  speaker references) or the user's own (`--gold`), never a system's clip; a "bad" one, a clip in heavy noise;
- trapping trials, made with the tool's own TTS: a clip that breaks off into "This is an interruption. Please
  select the answer N.";
each kept with the answer it expects, and none byte-identical to a test clip. What the listener's browser gets of
a clip is an opaque id and its audio, and the audio tells no system: every clip of a test is a 16-bit mono WAV at
one sample rate (the highest of the runs': no system is made worse) and, unless turned off, at one active speech
level (ITU-T P.56, -26 dBov; pipeline/io/level.py)."""
from __future__ import annotations

import io
import json
import random
import sqlite3
from dataclasses import asdict, dataclass, field
from itertools import cycle
from pathlib import Path
from typing import Iterator

import numpy as np

from pipeline.core import store
from pipeline.core.records import Status
from pipeline.errors import InputError
from pipeline.io import audio, conditions, level
from pipeline.listen import database, qualify, typed
from pipeline.listen.kinds import KINDS, Kind

NOISY, HEAVY = 10.0, -5.0  # dB SNR: the training set's middle and low, the bad gold's
TRAP_LEAD_S = 1.5  # of a real clip before the interruption
PAUSE_S = 0.25  # the break before a trap's interruption; a pair trap's plain side has it too


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
    condition: str = "clean"  # the runs' condition rated, or several, comma-separated: a system for each
    seed: int = 1337
    gold: str = ""  # the user's gold clips: a CSV of audio,expected (single-clip kinds)
    level_dbov: float | None = level.TARGET_DBOV  # every clip's active speech level (P.56); None: as the runs made it
    plays: int | None = None  # times each recording of a trial may be played (0: any); None: the kind's own
    sets: str = ""  # a TSV of set,text: each sentence's set (unpredictable, predictable, shuffled), by its text
    qualify: bool = False  # P.808's hearing check first (qualify.py)
    headphones: bool = False  # and the headphone check (qualify.py)

    @property
    def conditions(self) -> list[str]:
        return [c.strip() for c in self.condition.split(",") if c.strip()]


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
    heard: dict = field(default_factory=dict)  # each of the run's engines' transcript of this audio
    perplexity: float | None = None  # the run's LM's perplexity of the sentence, where it had one
    surprisal: list = field(default_factory=list)  # each word's (listen/typed.py's words), where the run had them
    condition: str = ""  # the runs' condition the audio was heard in

    @property
    def utterance(self) -> tuple[str, str]:
        """The run's utterance this clip is: its folder and id (two versions scored from one manifest share ids)."""
        return self.run_folder, self.utterance_id


def made(role: str, like: Clip, samples: np.ndarray, sr: int | None = None) -> Clip:
    """A clip the tool made (gold, trap, training, another voice): of no system, with no measures."""
    return Clip(role, "", "", "", "", like.sentence_id, "", "", {}, samples, sr or like.sr)


def wav_bytes(samples: np.ndarray, sr: int) -> bytes:
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, np.clip(samples, -1.0, 1.0), sr, subtype="PCM_16", format="WAV")
    return buf.getvalue()


def named(system: str, condition: str, conditions: list[str]) -> str:
    """A system's name in a test: its run (and voice), and its condition where the test rates several."""
    return system if len(conditions) == 1 else f"{system} @ {condition}"


def unnamed(system: str, condition: str, conditions: list[str]) -> list[str]:
    """A test's system as [its run (and voice), its condition]: `named` undone."""
    return [system if len(conditions) == 1 else system[:-len(f" @ {condition}")], condition]


def clips_of(runs: list, conditions: list[str]) -> dict[str, dict[str, Clip]]:
    """{system: {sentence id: clip}}: each run's voices in each condition, one clip per sentence (the engines of a
    run heard the same audio)."""
    out: dict[str, dict[str, Clip]] = {}
    for run in runs:
        voices = {u.voice for u in run.utterances}
        heard: dict[tuple[str, str, str], dict[str, str]] = {}
        for u in run.utterances:
            if u.condition in conditions and u.status == Status.OK:
                heard.setdefault((u.voice, u.condition, u.sentence_id), {})[u.asr] = u.hypothesis
        for u in run.utterances:
            if u.condition not in conditions or u.status != Status.OK or not u.audio_path:
                continue
            system = named(run.name if len(voices) == 1 else f"{run.name}/{u.voice}", u.condition, conditions)
            if u.sentence_id in out.get(system, {}):
                continue
            try:
                samples, sr = audio.read(run.audio(u.audio_path))
            except audio.BadAudio as e:
                raise InputError(f"{run.name}: {e}; the run's audio must be where its utterances.csv says") from None
            clip = Clip("test", system, run.name, run.where, u.voice, u.sentence_id, u.id,
                        u.reference, dict(u.measures), samples, sr, store.sha256_or_none(run.audio(u.audio_path)),
                        heard[u.voice, u.condition, u.sentence_id], u.perplexity,
                        typed.surprisal(u.reference, u.reference_normalized, list(u.word_surprisal)), u.condition)
            out.setdefault(system, {})[u.sentence_id] = clip
            if u.speaker_reference:
                spoken_like = audio.read(run.audio(u.speaker_reference))
                out.setdefault("\0references", {})[clip.utterance] = made("reference", clip, *spoken_like)
    have = {u.condition for run in runs for u in run.utterances if u.status == Status.OK}
    missing = [c for c in conditions if c not in have]
    if missing or not any(k != "\0references" for k in out):
        raise InputError(f"--condition: the runs have no utterance heard in "
                         f"{', '.join(map(repr, missing or conditions))}; they were heard in "
                         f"{', '.join(sorted(have)) or 'none'}: pick from those, comma-separated")
    return out


def create(out: str | Path, run_names: list[str], options: Options, results_dir: str = "results") -> str:
    """Make the test; returns its admin token (only its hash is kept)."""
    from pipeline.gate import sealed

    kind = KINDS.get(options.kind)
    out = Path(out)
    if out.exists():
        raise InputError(f"{out}: exists; a listening test is made once (give another file, or remove it)")
    loaded = [sealed.load(name, results_dir) for name in run_names]
    seen: dict[str, tuple[str, Path]] = {}
    for given, run in zip(run_names, loaded):
        if run.name in seen:
            first, folder = seen[run.name]
            if folder.resolve() == run.folder.resolve():
                raise InputError(f"{given}: the run {first} again; give each run once")
            raise InputError(f"{first} and {given} are both runs named {run.name!r}, and a test names its systems by "
                             f"their runs' names: rename one run's folder (mv {run.folder} {run.folder}-b), which "
                             "changes its name and nothing else")
        seen[run.name] = given, run.folder
    if options.plays is not None and options.plays < 0:
        raise InputError(f"--plays {options.plays}: give the times a recording may be played, or 0 for any")
    if options.gold and not Path(options.gold).is_file():
        raise InputError(f"--gold {options.gold}: no such file; give a CSV with columns audio,expected")
    if not options.conditions or len(set(options.conditions)) < len(options.conditions):
        raise InputError(f"--condition {options.condition!r}: give the runs' conditions to rate, each once, "
                         "comma-separated (clean,noise:snr=10)")
    by = clips_of(loaded, options.conditions)
    references = by.pop("\0references", {})
    systems = sorted(by)
    shared = kind.sentences(by)
    rng = random.Random(options.seed)
    if options.sentences and len(shared) > options.sentences:
        shared = sorted(rng.sample(shared, options.sentences))
    if not shared:
        raise InputError("the runs share no sentence; a comparison needs the same sentences in every system")
    admin = database.token()
    rate = max(c.sr for clips in (*by.values(), references) for c in clips.values())
    with store.atomic_path(out) as tmp:
        conn = database.connect(tmp, create=True)
        try:
            write(Maker(conn=conn, kind=kind, options=options, rng=rng, rate=rate, by=by, references=references,
                        systems=systems, shared=shared,
                        languages={run.name: run.scores.language for run in loaded}), admin, run_names)
        finally:
            conn.close()
        for suffix in ("-wal", "-shm"):
            Path(f"{tmp}{suffix}").unlink(missing_ok=True)
    return admin


@dataclass(kw_only=True)
class Maker:
    """What a kind makes its trials with: the test's clips by system and sentence, and the writing of a clip and a
    trial into the test file."""
    conn: sqlite3.Connection
    kind: Kind
    options: Options
    rng: random.Random
    rate: int  # every clip's sample rate
    by: dict[str, dict[str, Clip]]  # system → sentence → clip
    references: dict[tuple[str, str], Clip]  # a clip's utterance (Clip.utterance) → its speaker reference
    systems: list[str]
    shared: list[str]  # the sentences tested
    languages: dict[str, str] = field(default_factory=dict)  # run name → the language it was scored in
    rated: dict[tuple[str, str], str] = field(default_factory=dict)  # (system, sentence) → its test clip's id
    reference_ids: dict[tuple[str, str], str] = field(default_factory=dict)  # as `references` → its clip's id
    tested: set[str] = field(default_factory=set)  # the test clips' audio, which no gold or trapping clip may be
    pick: Iterator[Clip] = iter(())  # the clips the tool's own trials are cut from, in turn (Kind.own_clips)

    @property
    def language(self) -> str:
        """The runs' language where they share one; "" where they are in several."""
        found = set(self.languages.values())
        return found.pop() if len(found) == 1 else ""

    def put(self, clip: Clip) -> str:
        """The clip at the test's rate and level; its id."""
        samples = audio.resample(clip.samples, clip.sr, self.rate) if clip.sr != self.rate else clip.samples
        if self.options.level_dbov is not None:
            samples = level.leveled(samples, self.rate, self.options.level_dbov)
        return self.insert(clip, samples)

    def put_as_made(self, role: str, sentence: str, samples: np.ndarray) -> str:
        """A clip the tool made at the test's rate, kept at its own level and channels (the headphone check's
        stereo tones, whose levels are what it asks about)."""
        return self.insert(Clip(role, "", "", "", "", sentence, "", "", {}, samples, self.rate), samples)

    def insert(self, clip: Clip, samples: np.ndarray) -> str:
        """The clip's row, with `samples` (at the test's rate) as its audio; its id."""
        import hashlib

        cid = database.token(12)
        data = wav_bytes(samples, self.rate)
        sha = hashlib.sha256(data).hexdigest()
        if clip.role == "test":
            self.tested.add(sha)
        elif clip.role in ("gold", "trap") and sha in self.tested:
            raise InputError(f"a {clip.role} clip would be a test clip's very audio (sentence {clip.sentence_id}); "
                             "give --gold clips of your own")
        self.conn.execute("INSERT INTO clips (id, role, system, run, run_folder, voice, sentence_id, utterance_id, "
                          "reference_text, source_sha256, audio_sha256, seconds, measures, audio, heard, perplexity, "
                          "surprisal) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                          (cid, clip.role, clip.system, clip.run, clip.run_folder, clip.voice, clip.sentence_id,
                           clip.utterance_id, clip.reference_text, clip.source_sha256, sha,
                           round(len(samples) / self.rate, 3), json.dumps(clip.measures), data,
                           json.dumps(clip.heard), clip.perplexity, json.dumps(clip.surprisal)))
        return cid

    def trial(self, role: str, first: str, second: str | None, sentence: str, expected: int | str | None = None,
              swapped: bool | None = None) -> None:
        """A trial of one clip or two; `swapped` None: the order two clips play in drawn for it."""
        swap = (self.rng.random() < 0.5) if swapped is None and second is not None else bool(swapped)
        self.conn.execute("INSERT INTO trials (id, role, first, second, swapped, expected, sentence_id) "
                          "VALUES (?,?,?,?,?,?,?)",
                          (database.token(12), role, first, second, int(swap), expected, sentence))

    def variant(self, clip: Clip, role: str, snr: float | None) -> Clip:
        """The clip as the tool's own (a gold, trap or training clip), in noise at `snr` dB (None: as it is)."""
        samples = clip.samples if snr is None else conditions.apply(conditions.Condition("noise", snr), clip.samples,
                                                                    clip.sr, self.rng.randrange(1 << 30))
        return made(role, clip, samples)

    @property
    def naturals(self) -> list[Clip]:
        """The runs' natural recordings (speaker references), in a fixed order."""
        return [self.references[u] for u in sorted(self.references, key=lambda u: u[::-1])]  # by id, then run


def write(maker: Maker, admin: str, run_names: list[str]) -> None:
    kind, options, by, systems, shared = maker.kind, maker.options, maker.by, maker.systems, maker.shared
    maker.conn.execute("BEGIN")
    for system in systems:
        for sentence in shared:
            if sentence in by[system]:
                maker.rated[system, sentence] = maker.put(by[system][sentence])
    kind.test_trials(maker)
    maker.pick = cycle(kind.own_clips(maker))
    notes = kind.gold_trials(maker)
    traps(maker)
    for check, asked in ((qualify.HEADPHONES, options.headphones), (qualify.HEARING, options.qualify)):
        if asked:
            check.make(maker)
    for snr in (None, NOISY, HEAVY):  # the training set: the quality range, rated first, never analysed
        kind.training_trial(maker, next(maker.pick), snr)
    settings = {**asdict(options), "runs": run_names, "systems": systems, "sentences": shared,
                "conditions": {system: unnamed(system, next(iter(by[system].values())).condition,
                                               options.conditions) for system in systems},
                "sample_rate": maker.rate, "notes": notes, "sets": sets_of(options.sets, by, shared),
                "language": maker.language}
    maker.conn.execute("INSERT INTO test (id, name, kind, created, votes_per_clip, trials_per_session, admin_sha256, "
                       "settings) VALUES (1,?,?,?,?,?,?,?)",
                       (options.name, kind.name, database.now(), options.votes_per_clip, options.trials_per_session,
                        database.hashed(admin), json.dumps(settings)))
    maker.conn.execute("COMMIT")


def sets_of(path: str, by: dict[str, dict[str, Clip]], shared: list[str]) -> dict[str, str]:
    """Each tested sentence's set, from a TSV of set and text (`listen sentences` writes one), matched by its text;
    {} without one. A sentence the file does not name, or a line that names no tested sentence, is an error."""
    if not path:
        return {}
    import csv

    try:
        reader = csv.DictReader(Path(path).read_text(encoding="utf-8").splitlines(), delimiter="\t")
        if not {"set", "text"} <= set(reader.fieldnames or ()):
            raise ValueError(f"its columns are {reader.fieldnames}")
        named = {row["text"].strip(): row["set"].strip() for row in reader}
    except (OSError, UnicodeDecodeError, ValueError, AttributeError) as e:
        raise InputError(f"--sets {path}: not a TSV of set and text ({e}); give the .sets.tsv `listen sentences` "
                         "wrote") from None
    texts = {s: next(c.reference_text for clips in by.values() for k, c in clips.items() if k == s) for s in shared}
    missing = [s for s, text in texts.items() if text.strip() not in named]
    if missing:
        raise InputError(f"--sets {path}: names no set for {len(missing)} tested sentence(s) ({', '.join(missing[:3])}"
                         f"…); give the sets of the sentences these runs spoke")
    return {s: named[text.strip()] for s, text in texts.items()}


def user_gold(maker: Maker) -> None:
    """The user's gold clips (`--gold`, a CSV of audio,expected), each a trial of one clip."""
    import csv

    path = Path(maker.options.gold)
    for n, row in enumerate(csv.DictReader(path.read_text(encoding="utf-8").splitlines()), 2):
        try:
            expected = maker.kind.gold_answer(row["expected"])
            samples, sr = audio.read(Path(path.parent, row["audio"]))
        except (KeyError, TypeError, ValueError, audio.BadAudio) as e:
            raise InputError(f"--gold {path} line {n}: {e}; expected audio,expected columns") from None
        maker.trial("gold", maker.put(Clip("gold", "", "", "", "", f"gold-{n}", "", "", {}, samples, sr)), None,
                    f"gold-{n}", expected)


def traps(maker: Maker) -> None:
    """Trapping trials: a real clip that breaks off into the tool's own voice asking for one answer."""
    from pipeline.tts import base as tts

    voice = tts.load("piper:joe")
    for n in range(max(1, maker.options.traps_per_session) * 2):
        clip = next(maker.pick)
        answer, request = maker.kind.trap(maker.rng, maker.language)
        message, sr = voice.synthesize(f"This is an interruption. {request}")
        cut = int(TRAP_LEAD_S * clip.sr)
        pause = np.zeros(int(PAUSE_S * clip.sr), np.float32)
        trapped = maker.put(made("trap", clip, np.concatenate([clip.samples[:cut], pause,
                                                                audio.resample(message, sr, clip.sr)])))
        # the plain side breaks where the trap does, so that it is not a test clip's audio
        plain = maker.put(made("trap", clip, np.concatenate([clip.samples[:cut], pause, clip.samples[cut:]]))) \
            if maker.kind.two_clips else None
        maker.kind.trap_trial(maker, clip, trapped, plain, answer)


def summary(path: str | Path) -> str:
    """One line: what the test holds."""
    conn = database.connect(path)
    try:
        test = database.Test.read(conn)
        roles = dict(conn.execute("SELECT role, count(*) FROM trials GROUP BY role").fetchall())
        qualifying = [s for (s,) in conn.execute("SELECT sentence_id FROM trials WHERE role = ?", (qualify.ROLE,))]
    finally:
        conn.close()
    systems, settings = test.settings["systems"], test.settings
    trials = roles.get("test", 0)
    level_said = f"{settings['level_dbov']:g} dBov active speech level (P.56)" \
        if settings.get("level_dbov") is not None else "their own levels"
    notes = "".join(f"\n  note: {n}" for n in settings.get("notes", []))
    checks = "".join(f", {n} {name}" for check, name in ((qualify.HEARING, "hearing check"),
                                                        (qualify.HEADPHONES, "headphone check"))
                     if (n := sum(map(check.owns, qualifying))))
    held, once = test.trials_per_session, ""
    if KINDS.get(test.kind).each_sentence_once and len(settings["sentences"]) < held:
        held, once = len(settings["sentences"]), " (each sentence once)"
    return (f"a {test.kind.upper()} test of {len(systems)} system(s) ({', '.join(systems)}) on "
            f"{len(settings['sentences'])} sentences: {trials} test trials, {roles.get('gold', 0)} "
            f"gold, {roles.get('trap', 0)} trapping, {roles.get('training', 0)} training"
            f"{checks}; every clip at "
            f"{settings.get('sample_rate', '?')} Hz and {level_said}; {test.votes_per_clip} votes asked for each "
            f"test trial, {held} a session{once}, so {sessions(trials, test.votes_per_clip, held)} "
            f"listener sessions{notes}")


def sessions(trials: int, votes: int, per_session: int) -> int:
    """Listener sessions it takes for every test trial to get its votes: a session holds a trial at most once, so
    a test of fewer trials than a session holds takes as many sessions as votes."""
    return -(-trials * votes // max(1, min(per_session, trials))) if trials else 0
