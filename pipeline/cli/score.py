"""`run_pipeline.py score`: score your own transcripts; no model is loaded."""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Iterator, NamedTuple

from pipeline.cli.command import COMMANDS, Command, program
from pipeline.config import recipes
from pipeline.config.presets import preset
from pipeline.core import records, tables
from pipeline.core.options import add_flags, apply, check, given
from pipeline.scoring.utterances import Pair
from pipeline.errors import ConfigError, InputError
from pipeline.exec import fanout
from pipeline.io.inputs import text_lines
from pipeline.scoring import (alternations, chop, confidence, glm, hubscr, labels, language, lenient, normalize,
                              sclite, speakers, stm)
from pipeline.scoring.config import Comparability, ScoreConfig
from pipeline.scoring.language import NOASCII, Characters
from pipeline.scoring.lenient import Lenient
from pipeline.scoring.normalize import Normalizer
from pipeline.render.terminal import summary_table
from pipeline.scoring.evaluate import without_cycle_collection
from pipeline.scoring.files import (CONFIDENCE, EVENTS, FILES, LABELS, SPEAKERS, SUMMARY, SUMMARY_JSON, UTTERANCES,
                                    stream)
from pipeline.scoring.utterances import Results
from pipeline.statistics import STATISTICS, comparisons


class Survey(NamedTuple):
    lines: int
    entries: list[tuple[str, str]] | None  # (id, text) of a trn file's lines, or of a Kaldi text file's
    heads: list[str] | None  # each line's first word, where every line has one, with a digit, none twice: an id?


def survey(path: str, flag: str, kaldi: bool = False) -> Survey:
    """A file read in one pass: how many lines it has; its (id, text) entries where it is a trn file (every line
    `text (id)`, but blank lines and sclite's comment lines, `;;` or `**` first), or with `kaldi`, a Kaldi text file
    (`id text` lines, blank ones read past); and what its lines' first words say of it. A plain file is held a line
    at a time; in a plain file every line is an utterance."""
    n, entries, heads, seen = 0, [], [], set()
    for line in text_lines(path, flag):
        n += 1
        words = line.split(maxsplit=1)
        if kaldi:
            if words:
                entries.append((words[0], words[1].strip() if len(words) > 1 else ""))
            continue
        if heads is not None:
            if not words or words[0] in seen or not any(c.isdigit() for c in words[0]):
                heads = None
            else:
                seen.add(words[0])
                heads.append(words[0])
        if entries is not None and words and not line.startswith(sclite.COMMENTS):
            entry = sclite.trn_entry(line)
            if entry is None:
                entries = None
            else:
                entries.append(entry)
    return Survey(n, entries or None, None if kaldi else heads or None)


def read_pairs(ref_path: str, hyp_path: str, normalizer: Normalizer, rules: Lenient = lenient.PLAIN,
               glms: dict[tuple[str, str], glm.Glm] | None = None, fold_ids: bool = False,
               kaldi: str | None = None, reduce: frozenset[str] = frozenset(), ctm_chop: str = chop.CHOPS[0],
               timed: bool = False, workers: int = 1) -> Read:
    """The pairs of the two files, both checked whole before the first pair is given, how their ids name speakers,
    where they do (trn files whose ids, or some of them, have a speaker part: speakers.py; an stm's segments), and
    an stm's segments' labels. Plain files pair line by line, each line an utterance with its line number as id,
    empty lines too (an engine that heard nothing wrote an empty line), read a pair at a time; trn files pair by id;
    an stm reference and a ctm hypothesis (by their names' suffixes, as sclite is told `stm` and `ctm`) pair as
    sclite cuts them (scoring/stm.py). A reference's alternations (`{ a / b }`) are resolved as sclite resolves
    them, by the hypothesis after `normalizer` (scoring/alternations.py), and so is each pair that `rules` (sclite's
    -D and -F) could score otherwise. `glms`: a GLM's rules for each side and format (glms_of), applied first, as
    csrfilt.sh filters trn, stm and ctm files (scoring/glm.py): the hypotheses' alternations it writes are then read
    as sclite reads them. `fold_ids`: trn ids pair whatever their case in A-Z, as sclite pairs them without -s
    (each row keeps the reference's id). `kaldi`: both are Kaldi text files (`id text`), paired by id as Kaldi's
    compute-wer pairs them in that --mode (KALDI_MODES), their braces words. `reduce`: sclite's -m, for an stm and
    a ctm (stm.REDUCTIONS). A ctm reference and ctm hypotheses pair as the sclite `ctm_chop` names chops them
    (scoring/chop.py), each pair aligned by its words' times where `timed` (sclite -T). `workers`: processes that
    filter and resolve the pairs where some need it (resolve_all); every pair is resolved alone."""
    where = f"{ref_path} and {hyp_path}"
    if is_ctm(ref_path):
        return read_ctm_pairs(ref_path, hyp_path, normalizer, rules, glms, ctm_chop, timed, workers)
    if is_stm(ref_path) or is_ctm(hyp_path):
        return read_stm_pairs(ref_path, hyp_path, normalizer, rules, glms, reduce, workers)
    (n_refs, refs, ref_heads), (n_hyps, hyps, hyp_heads) = (survey(ref_path, "--ref", bool(kaldi)),
                                                            survey(hyp_path, "--hyp", bool(kaldi)))
    if kaldi and not (refs and hyps):
        raise InputError(f"--format kaldi: {ref_path if not refs else hyp_path} has no line; a Kaldi text file has "
                         "a line `id text` for each utterance")
    if (refs is None) != (hyps is None):
        raise InputError(f"{ref_path} and {hyp_path}: one is a trn file and the other is not; give both as trn "
                         "(`text (id)` lines) or both as one utterance per line")
    if refs is not None:
        key = normalize.ascii_lowercase if fold_ids else str
        ref_ids, hyp_ids = {key(u): t for u, t in refs}, {key(u): t for u, t in hyps}
        for flag, path, pairs, ids in (("--ref", ref_path, refs, ref_ids), ("--hyp", hyp_path, hyps, hyp_ids)):
            if len(ids) != len(pairs):
                raise InputError(f"{flag} {path}: the same utterance id twice"
                                 + (" (as sclite reads ids, A-Z and a-z alike)" if fold_ids else "")
                                 + f"; ids in a {'Kaldi text' if kaldi else 'trn'} file must be unique")
        missing, extra = sorted(set(ref_ids) - set(hyp_ids)), sorted(set(hyp_ids) - set(ref_ids))
        if kaldi:
            refs = as_compute_wer(kaldi, refs, hyp_ids, missing, extra, key, f"{ref_path} and {hyp_path}")
            missing = extra = []
        if missing or extra:
            raise InputError(f"ids do not match: {len(missing)} only in {ref_path} (e.g. {missing[:3]}), "
                             f"{len(extra)} only in {hyp_path} (e.g. {extra[:3]}); give each utterance a line in "
                             "both, with the same id (where an engine heard nothing, its id alone: `(id)`)")
        resolving = Resolving(where, normalizer, rules, ways=kaldi is None, paths=(ref_path, hyp_path),
                              glms=glms and (glms["ref", "trn"], glms["hyp", "trn"]))
        found = resolve_all([Unresolved(uid, text, hyp_ids[key(uid)]) for uid, text in refs], resolving, workers)
        pairs = [Pair(sentence_id=uid, **f) for (uid, _), f in zip(refs, found)]
        named = any(speakers.speaker_of(uid) != uid for uid, _ in refs)
        return Read(iter(pairs), speaker=speakers.speaker_of if named else None)
    if n_refs != n_hyps:
        raise InputError(f"--ref {ref_path} has {n_refs} lines but --hyp {hyp_path} has {n_hyps}; they pair "
                         "line by line, empty lines included (or use trn files with ids)")
    if glms is not None:
        raise InputError(f"--glm with {ref_path} and {hyp_path}: csrfilt.sh filters trn files (`text (id)` lines), "
                         "whose braces write alternations; give both as trn")
    if ref_heads and hyp_heads and set(ref_heads) == set(hyp_heads):
        print(f"note: every line of {ref_path} and {hyp_path} begins with a word of its own, the same words in both "
              f"({ref_heads[0]!r}, ...): Kaldi's `id text` lines? Plain files pair line by line, each id a word of "
              "its line; --format kaldi pairs them by id")
    return Read(Pair(sentence_id=f"line{n:05d}",
                     **resolved(where, f"line {n}", r.strip(), h.strip(), normalizer, rules, ways=False))
                for n, (r, h) in enumerate(zip(text_lines(ref_path, "--ref"), text_lines(hyp_path, "--hyp")), 1))


KALDI_MODES = ("strict", "present", "all")  # compute-wer's --mode: what becomes of a reference no hypothesis has


def as_compute_wer(mode: str, refs: list[tuple[str, str]], hyp_ids: dict[str, str], missing: list[str],
                   extra: list[str], key, where: str) -> list[tuple[str, str]]:
    """The references compute-wer scores in `mode`, iterating over the references alone: a hypothesis of no
    reference is passed over; a reference of no hypothesis stops it (strict), is passed over (present) or scored
    as nothing heard (all), said on the terminal."""
    if missing and mode == "strict":
        raise InputError(f"{where}: {len(missing)} references have no hypothesis line (e.g. {missing[:3]}), where "
                         "compute-wer --mode=strict stops too: give each its line (the id alone where nothing was "
                         "heard), or --kaldi-mode present to leave them out, or all to score them as nothing heard")
    if extra:
        print(f"note: {stm.counted(len(extra), 'hypothesis line')} of no reference left out, as compute-wer "
              f"leaves them out (e.g. {extra[:3]})")
    if missing and mode == "present":
        print(f"note: {stm.counted(len(missing), 'reference')} with no hypothesis left out, as compute-wer "
              "--mode=present leaves them out: the rate is over the others")
        refs = [(u, t) for u, t in refs if key(u) in hyp_ids]
        if not refs:
            raise InputError(f"{where}: no reference has a hypothesis; nothing to score")
    elif missing:
        print(f"note: {stm.counted(len(missing), 'reference')} with no hypothesis scored as nothing heard, as "
              "compute-wer --mode=all scores them")
        hyp_ids.update(dict.fromkeys(missing, ""))
    return refs


def is_stm(path: str) -> bool:
    return Path(path).suffix.lower() == ".stm"


def is_ctm(path: str) -> bool:
    return Path(path).suffix.lower() == ".ctm"


class Read(NamedTuple):
    pairs: Iterator[Pair]
    labels: dict[str, tuple[str, int]] | None = None  # an stm's: id → its segment's `<...>` field and line
    speaker: speakers.Speaker | None = None
    confident: bool = False  # its pairs carry their words' confidences (a ctm's, every word with one)
    segments: tuple[int, ...] = ()  # an stm's: the line of each segment scored; a ctm reference's: the line each
    # utterance's reference begins at (0: none)


def read_stm_pairs(ref_path: str, hyp_path: str, normalizer: Normalizer, rules: Lenient,
                   glms: dict[tuple[str, str], glm.Glm] | None, reduce: frozenset[str] = frozenset(),
                   workers: int = 1) -> Read:
    if not (is_stm(ref_path) and is_ctm(hyp_path)):
        raise InputError(f"--ref {ref_path}, --hyp {hyp_path}: an stm reference is scored against ctm hypotheses "
                         "(as `sclite -r ref.stm stm -h hyp.ctm ctm`); give the reference as a .stm file and every "
                         "--hyp as a .ctm file, or both as trn or plain text")
    cut = stm.utterances(stm.read_stm(ref_path, rules=glms and glms["ref", "stm"]),
                         stm.read_ctm(hyp_path, rules=glms and glms["hyp", "ctm"]), hyp_path, reduce=reduce)
    print(cut.line(hyp_path))
    return cut_pairs(cut, ref_path, hyp_path, normalizer, rules, workers)


def read_ctm_pairs(ref_path: str, hyp_path: str, normalizer: Normalizer, rules: Lenient,
                   glms: dict[tuple[str, str], glm.Glm] | None, how: str = chop.CHOPS[0], timed: bool = False,
                   workers: int = 1) -> Read:
    if not is_ctm(hyp_path):
        raise InputError(f"--ref {ref_path}, --hyp {hyp_path}: a ctm reference is scored against ctm hypotheses (as "
                         "`sclite -r ref.ctm ctm -h hyp.ctm ctm`); give every --hyp as a .ctm file")
    cut = chop.utterances(ref_path, hyp_path, how, timed, glms and (glms["ref", "ctm"], glms["hyp", "ctm"]))
    print(chop.line(cut, hyp_path, how))
    return cut_pairs(cut, ref_path, hyp_path, normalizer, rules, workers)


def cut_pairs(cut: stm.Cut, ref_path: str, hyp_path: str, normalizer: Normalizer, rules: Lenient,
              workers: int = 1) -> Read:
    """The pairs of utterances cut from timed files, an stm's or a ctm reference's."""
    if cut.unconfident:
        print(f"note: {hyp_path}: {stm.counted(cut.unconfident, 'word')} without a confidence among words with one; "
              "no NCE (sclite would count each missing one as 0): give every word one, or none")
    pairs, crossed = [], 0
    found = resolve_all([Unresolved(uid, ref, hyp, cut.confidences.get(uid), cut.timed.get(uid))
                         for uid, ref, hyp in cut.utterances],
                        Resolving(f"{ref_path} and {hyp_path}", normalizer, rules), workers)
    for (uid, _, _), f in zip(cut.utterances, found):
        crossed += f.pop("nulls", 0) > 0
        pairs.append(Pair(sentence_id=uid, **f))
    if crossed:
        print(f"note: {hyp_path}: in {stm.counted(crossed, 'utterance')}, aligned by time, an alternation's way of no "
              "word (`@`, which starts and ends at 0 s) meets a hypothesis word that starts at 0 s: sclite -T takes "
              "the tie as a substitution and counts the `@` a reference word; here the word is an insertion")
    return Read(iter(pairs), cut.labels, stm.speaker_of, bool(cut.confidences), cut.segments)


class Unresolved(NamedTuple):
    """A pair as read, before resolve_all filters its texts and resolves their alternations."""
    uid: str
    reference: str
    hypothesis: str
    confidences: tuple[float | None, ...] | None = None  # resolved()'s
    times: tuple[list, list] | None = None


class Resolving(NamedTuple):
    """What every pair of two files is resolved with (resolved()'s), and the GLM's rules for each side, with the
    files' paths, where a trn file's texts are filtered first."""
    where: str
    normalizer: Normalizer
    rules: Lenient
    ways: bool = True
    glms: tuple[glm.Glm, glm.Glm] | None = None
    paths: tuple[str, str] = ("", "")


RESOLVE_CHUNK = 500  # pairs a worker is given at a time
_RESOLVING: Resolving | None = None  # set before the workers fork, so they inherit it: a GLM is not sent to them


def resolve_all(pairs: list[Unresolved], resolving: Resolving, workers: int) -> list[dict]:
    """resolved() of each pair, its texts through the GLM's rules first where `resolving` has them, in the pairs'
    order: on `workers` processes where some pair needs more than a look at its characters (a GLM, an alternation,
    a word sclite's -D or -F could score otherwise, times), a chunk at a time; the first pair in order that cannot be
    resolved is the error raised, as in one process."""
    global _RESOLVING
    r = resolving
    if r.glms is None and all(as_written(p.reference, p.hypothesis, r.rules, r.ways, p.times) for p in pairs):
        return [written(p.reference, p.hypothesis, p.confidences) for p in pairs]  # without looking again
    chunks = [pairs[k:k + RESOLVE_CHUNK] for k in range(0, len(pairs), RESOLVE_CHUNK)]
    _RESOLVING = resolving
    try:
        return [f for part in fanout.ordered(_resolved_chunk, chunks, workers) for f in part]
    finally:
        _RESOLVING = None


def _resolved_chunk(chunk: list[Unresolved]) -> list[dict]:
    r, out = _RESOLVING, []
    for p in chunk:
        reference, hypothesis = p.reference, p.hypothesis
        if r.glms is not None:
            reference, hypothesis = (_filtered(rules, path, p.uid, text) for rules, path, text in
                                     zip(r.glms, r.paths, (reference, hypothesis)))
        out.append(resolved(r.where, p.uid, reference, hypothesis, r.normalizer, r.rules, r.ways, p.confidences,
                            p.times))
    return out


def _filtered(rules: glm.Glm, path: str, uid: str, text: str) -> str:
    """A trn line's text through a GLM, as csrfilt.sh filters it."""
    try:
        return rules.filter(text)
    except ValueError as e:
        raise InputError(f"--glm on {path}: utterance {uid}: {e}") from None


def as_written(reference: str, hypothesis: str, rules: Lenient, ways: bool, times: tuple | None) -> bool:
    """Whether resolved() gives the pair as written: no alternation (where braces write them), no word sclite's -D
    or -F could score otherwise, no times to align by; a look at the characters."""
    return times is None and not (ways and (alternations.held(reference) or alternations.held(hypothesis))) \
        and not rules.held(reference, hypothesis)


def written(reference: str, hypothesis: str, confidences: tuple[float | None, ...] | None) -> dict:
    return {"reference": reference, "hypothesis": hypothesis, "word_confidence": confidences}


def resolved(where: str, uid: str, reference: str, hypothesis: str, normalizer: Normalizer, rules: Lenient,
             ways: bool = True, confidences: tuple[float | None, ...] | None = None,
             times: tuple[list, list] | None = None) -> dict:
    """A Pair's reference and hypothesis, and where either writes alternations, the ways sclite reads them and its
    alignment; where sclite's -D or -F (`rules`) could score a word otherwise, that alignment too; where `times`
    gives each word's (start, end), the alignment by them (sclite -T). `ways`: whether braces write alternations
    (in trn and stm files, as in sclite's) or are words (in plain lines). `confidences`: of each word of the
    hypothesis as written, where they are known; its words' as read are the Pair's. With `times`, also `nulls`
    (alternations.Resolved's), which the caller takes out."""
    if as_written(reference, hypothesis, rules, ways, times):
        return written(reference, hypothesis, confidences)
    try:
        found = alternations.resolve(reference, hypothesis, normalizer, rules, ways, times)
    except ValueError as e:
        raise InputError(f"{where}: utterance {uid}: {e}") from None
    if times is not None and found.codes is None:
        raise InputError(f"{where}: utterance {uid}: the normalizer rewrites its words across words, so they cannot "
                         "be aligned by their times; align by time with --normalize sclite or none")
    timed = {} if times is None else {"nulls": found.nulls}
    if found.hypothesis is not None and confidences is not None:  # of the words of the way it was read
        read = alternations.read_positions(hypothesis, list(found.heard_ways))
        confidences = tuple(confidences[i] for i in read) if read or not found.hypothesis.split() \
            else (None,)  # no way found: no word's confidence is known
    return {"reference": found.reference, "codes": found.codes, "word_confidence": confidences,
            "hypothesis": hypothesis if found.hypothesis is None else found.hypothesis, **timed}


def glms_of(path: str | None, preset_name: str | None, lang: str = "en",
            filters: tuple[hubscr.Filter, ...] = ()) -> dict[tuple[str, str], glm.Glm] | None:
    """The GLM's rules for each side of each format, as hubscr.pl has csrfilt.sh apply them (`-t ref -i trn`,
    `-t hyp -i ctm`, ...: a GLM's sections can apply to some alone), with the flags hubscr.pl gives csrfilt.sh for
    `lang`, after its `filters`."""
    if path is None:
        if filters:
            raise ConfigError(f"{filters[0].flag}: hubscr.pl runs {filters[0].script} before csrfilt.sh applies the "
                              "GLM; give --glm FILE too")
        return None
    if preset_name:
        raise ConfigError(f"--glm: --preset {preset_name} scores as its recipe does, without a GLM; leave out one or "
                          "the other")
    which = hubscr.of(lang)
    flags, before = glm.Csrfilt(which.upcase, which.extended), tuple(f.step for f in filters)
    try:
        return {(side, fmt): glm.read(path, side, fmt, flags, before) for side, fmt in GLM_INPUTS}
    except OSError as e:
        raise ConfigError(f"--glm {path}: cannot read it ({e.strerror or e})") from None
    except ValueError as e:
        raise ConfigError(f"--glm {path}: {e}") from None


def filters_of(args: argparse.Namespace, lang: str) -> tuple[hubscr.Filter, ...]:
    """hubscr.pl's Arabic filters the flags ask for, refused elsewhere as hubscr.pl refuses them."""
    asked = tuple(f for f in hubscr.FILTERS if getattr(args, f.flag.removeprefix("--").replace("-", "_")))
    if asked and not hubscr.arabic(lang):
        raise ConfigError(f"{asked[0].flag}: hubscr.pl's {asked[0].hubscr} ({asked[0].script}) is for Arabic alone; "
                          f"give --language {hubscr.ARABIC}, or leave it out")
    return asked


# what csrfilt.sh is told, by file
GLM_INPUTS = (("ref", "trn"), ("hyp", "trn"), ("ref", "stm"), ("ref", "ctm"), ("hyp", "ctm"))


def systems(given: list[str]) -> list[tuple[str, str]]:
    """(name, path) of each --hyp: `NAME=PATH`, or a path named by its file's stem where several are given. One
    --hyp without a name is no system: its rows keep the user's ids."""
    out = []
    for value in given:
        name, named, path = value.partition("=")
        if not named or not name or "/" in name or Path(value).exists():
            name, path = (Path(value).stem if len(given) > 1 else ""), value
        out.append((name, path))
    names = [name for name, _ in out]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ConfigError(f"--hyp: two systems named {', '.join(map(repr, twice))}; name each: --hyp NAME=PATH")
    return out


def of_systems(readers: list[tuple[str, Iterator[Pair]]]) -> Iterator[Pair]:
    """Each system's pairs in turn, its name as their engine's: a group, and a side of the comparisons."""
    for name, pairs in readers:
        for p in pairs:
            p.asr = name
            yield p


class Marked:
    """The references' words that sclite would score leniently with -D and -F (lenient.marked), counted as the pairs
    go by: what a number scored so, as NIST's hubscr.pl scores, can differ by, where they were scored as words."""

    def __init__(self) -> None:
        self.optional = self.fragments = 0

    def counting(self, pairs: Iterator[Pair]) -> Iterator[Pair]:
        for p in pairs:
            optional, fragments = lenient.marked(p.reference)
            self.optional += optional
            self.fragments += fragments
            yield p

    def line(self, rules: Lenient) -> str | None:
        """What these words were scored as, where `rules` did not score them as sclite -D -F would."""
        optional = 0 if rules.optional else self.optional
        fragments = 0 if rules.fragments else self.fragments
        if not (optional or fragments):
            return None
        held = " and ".join(what for n, what in (
            (optional, f"{stm.counted(optional, 'word')} in parentheses (`(uh)`)"),
            (fragments, f"{stm.counted(fragments, 'fragment')} (`th-`)")) if n)
        unforgiven = Lenient(optional=optional > 0, fragments=fragments > 0)
        flags, options = unforgiven.names(joiner=" and "), unforgiven.names(lenient.OPTIONS, " and ")
        return (f"reference: {held}, scored as words, as sclite scores them without {flags}; NIST's hubscr.pl passes "
                f"-D and -F (a `(uh)` left out is correct, `th-` matches `the`): its numbers are not comparable with "
                f"these; {options} {'score' if ' and ' in options else 'scores'} as it does")


def as_hubscr(rules: Lenient, glm_path: str | None, characters: Characters | None = None, lang: str = "en",
              normalizer: str = "sclite", filters: tuple[hubscr.Filter, ...] = (), ctm_reference: bool = False
              ) -> str:
    """How a scoring with sclite's -D or -F, or a GLM (`glm_path`: its path and digest), stands to NIST's
    hubscr.pl, which has both; `characters`: how the texts were cut into characters, where they were (hubscr.pl
    scores Mandarin with sclite -c NOASCII DH); `lang`, `normalizer` and `filters`: what hubscr.pl's -l, sclite's -s
    and hubscr.pl's Arabic filters would be; `ctm_reference`: the reference a ctm, which hubscr.pl does not score."""
    cut = "" if characters is None else " -c NOASCII" + " DH" * characters.no_hyphens
    which = hubscr.of(lang)
    case = " -s" * which.case_sensitive
    kept = normalizer == "none"  # case, as sclite -s keeps it
    if not glm_path:
        return (f"scored as sclite{' -s' * kept} {rules.flags}{cut} scores (NIST's hubscr.pl passes -D -F, after "
                "filtering both texts with a GLM: --glm FILE)")
    known = hubscr.known(lang)
    call = f"hubscr.pl -l {which.name}{which.options}" + "".join(f" {f.hubscr}" for f in filters) if known else \
        f"hubscr.pl, which has no -l for {lang}: its English's flags"
    steps = "".join(f"{f.script}, then " for f in filters)
    applied = f"{steps}the GLM {glm_path} applied as csrfilt.sh {which.csrfilt} applies it"
    case_apart = "" if which.upcase or kept == which.case_sensitive else \
        "here A-Z and a-z alike, where sclite -s tells them apart (--normalize none)" if which.case_sensitive else \
        "here A-Z and a-z apart, where hubscr.pl's sclite takes them alike (--normalize sclite)"
    differs = "; ".join(filter(None, (which.left_out, case_apart)))
    if ctm_reference:
        lenient_flags = f" {rules.flags}" if rules else ""
        return (f"{applied} to each ctm file, -i ctm ({call}'s flags; hubscr.pl scores an stm reference alone), "
                f"then sclite{case}{lenient_flags}" + (f"; {differs}" if differs else ""))
    if rules == lenient.BOTH and known and not differs:
        return f"scored as NIST's {call} scores: {applied}, then sclite{case} -D -F{cut}"
    both = lenient.BOTH.names(lenient.OPTIONS, " ")
    return (f"{applied} ({call}); NIST's hubscr.pl then scores with sclite{case} -D -F ({both})"
            + (f", here {rules.flags} alone" if rules != lenient.BOTH and rules else "")
            + (f", and here cut into characters as sclite{cut} cuts them" if cut else "")
            + (f"; {differs}" if differs else ""))


FORMATS = ("auto", "kaldi")
KALDI_LINE = ("scored as Kaldi's compute-wer scores (the words as written, Kaldi's own alignment through kaldialign): "
              "comparable with the %WER of Kaldi and icefall recipes on the same texts")


def reduction(args: argparse.Namespace) -> frozenset[str]:
    """sclite's -m as --reduce asks for it: for an stm and its ctm files."""
    if args.reduce and not is_stm(args.ref):
        raise ConfigError(f"--reduce {','.join(args.reduce)}: sclite's -m cuts an stm reference and a ctm's words by "
                          f"their times, and {args.ref} is no .stm file; leave --reduce out")
    return frozenset(args.reduce or ())


def ctm_chop(args: argparse.Namespace) -> str:
    """Which sclite's chop --ctm-chop names: for a ctm reference."""
    if args.ctm_chop and not is_ctm(args.ref):
        raise ConfigError(f"--ctm-chop {args.ctm_chop}: sclite chops a ctm reference and its ctm hypotheses into "
                          f"utterances, and {args.ref} is no .ctm file; leave --ctm-chop out")
    return args.ctm_chop or chop.CHOPS[0]


def unpaired(ref: str, one: str, other: str, its: tuple[int, ...], theirs: tuple[int, ...]) -> str:
    """Why two systems' utterances of one stm or ctm reference cannot be paired: they are cut from it otherwise."""
    line = min(set(its) ^ set(theirs) - {0}, default=None)
    if is_ctm(ref):
        where = f"one begins at its line {line} for one of them only" if line else "their utterances of no " \
            "reference word fall otherwise"
        return (f"{one} and {other} chop {ref} into different utterances ({where}): sclite chops a ctm "
                "reference where gaps in it and in the hypothesis meet, so each system's utterances are its own. "
                f"The systems are compared by speaker alone ({SPEAKER_COMPARISONS}: sign and Wilcoxon tests, as "
                "sc_stats pairs speakers), with no MAPSSWE and no test by utterance; to pair utterances, give the "
                "reference as an stm, whose segments every system shares")
    return (f"--reduce ref: {one} and {other} cover different segments of {ref} (its line {line} is scored for one "
            "of them only), which cannot be paired; score each alone, or leave out --reduce ref")


def format_of(args: argparse.Namespace) -> str | None:
    """Where the files are Kaldi text files (--format kaldi), which neither a GLM nor an stm goes with, the
    compute-wer --mode they are paired in."""
    if args.format != "kaldi":
        if args.kaldi_mode != KALDI_MODES[0]:
            raise ConfigError(f"--kaldi-mode {args.kaldi_mode}: it is compute-wer's, for Kaldi text files; give "
                              "--format kaldi too, or leave it out")
        return None
    if args.glm:
        raise ConfigError("--glm with --format kaldi: csrfilt.sh filters trn, stm and ctm files; leave out one or "
                          "the other")
    if is_stm(args.ref) or any(is_ctm(h.rpartition("=")[2]) for h in args.hyp):
        raise ConfigError(f"--format kaldi with {args.ref}: an stm and its ctm files are read as sclite reads "
                          "them; leave --format out")
    return args.kaldi_mode


def rules_of(args: argparse.Namespace, cfg: ScoreConfig, lang: str) -> Lenient:
    """sclite's -D and -F as the flags ask for them, where the texts keep what marks the words."""
    rules = Lenient(optional=args.optional_words, fragments=args.fragments)
    asked = rules.names(lenient.OPTIONS, " and ")
    if rules and args.preset:
        raise ConfigError(f"{asked}: --preset {args.preset} scores as its recipe does, without sclite's -D and -F; "
                          "leave out one or the other")
    if rules and cfg.normalize in normalize.KALDI_COUNTED:
        raise ConfigError(f"{asked} with --normalize {cfg.normalize}: Kaldi's compute-wer has neither; leave "
                          f"{asked} out, or score as sclite does (--normalize sclite)")
    if rules and cfg.normalize not in lenient.KEEPING:
        raise ConfigError(f"{asked} with --normalize {cfg.normalize}: it strips the parentheses and hyphens that mark "
                          "the words; give --normalize sclite (as sclite folds case) or none")
    return rules


def characters_of(args: argparse.Namespace, cfg: ScoreConfig, lang: str, rules: Lenient) -> Characters | None:
    """How sclite's -c cuts the texts into characters, as -D and DH (--delete-hyphens) change it; None where the
    unit is the word."""
    if language.unit(lang, cfg.normalize) == language.WORD:
        if args.delete_hyphens:
            raise ConfigError(f"--delete-hyphens: sclite's -c DH deletes hyphens as it cuts words into characters, "
                              f"and {lang} is scored by words; leave it out, or give the references' --language")
        return None
    if args.delete_hyphens and cfg.normalize not in lenient.KEEPING:
        raise ConfigError(f"--delete-hyphens with --normalize {cfg.normalize}: it is sclite's -c DH; give --normalize "
                          "sclite (as sclite folds case) or none")
    return Characters(optional=rules.optional, no_hyphens=args.delete_hyphens, fragments=rules.fragments)


def compare(out: str, cfg: ScoreConfig, speaker_rows: list[speakers.SpeakerSummary], by_utterance: bool = True
            ) -> tuple[list[comparisons.Comparison], list[speakers.SpeakerComparison]]:
    """Every two systems paired on their utterances, as a run's compare stage pairs its engines (MAPSSWE, sign and
    Wilcoxon, Holm-corrected), from the files just written; comparisons.csv beside them. With `speaker_rows`
    (speakers.csv's), their speakers paired too, as sc_stats pairs them for its sign and Wilcoxon tests
    (speaker_comparisons.csv); alone, where the utterances are not `by_utterance` the same."""
    found = []
    if by_utterance:
        with without_cycle_collection():  # the records read back hold no cycle, as they held none when scored
            scored = tables.load((UTTERANCES, EVENTS, SUMMARY_JSON), out, Results)
            found = comparisons.compare(scored, cfg.bootstrap, cfg.seed)
        records.write_csv(Path(out) / COMPARISONS, comparisons.Comparison, found)
    by = speakers.compare(speaker_rows) if speaker_rows else []
    if speaker_rows:
        records.write_csv(Path(out) / SPEAKER_COMPARISONS, speakers.SpeakerComparison, by)
    return found, by


def speaker_verdict(c: speakers.SpeakerComparison) -> str:
    return (f"by speaker ({c.speakers}): {c.b} worse than {c.a} for {c.sign_b_worse}, better for {c.sign_b_better}, "
            f"{c.sign_ties} tied; sign p = {c.sign_p_holm:.3g}, signed-rank p = {c.signed_rank_p_holm:.3g} "
            "(Holm-corrected)" + (f"; {c.note}" if c.note else ""))


COMPARISONS = STATISTICS.get("comparisons").file
SPEAKER_COMPARISONS = "speaker_comparisons.csv"
# what --outputs chooses
OPTIONAL = (*(f for f in FILES if f not in (SUMMARY, SUMMARY_JSON)), SPEAKERS, LABELS, CONFIDENCE)


def chosen(names: str | None, speakers_named: bool, subsets: bool = False, confident: bool = False) -> tuple:
    """The files --outputs names (every one when not given; speakers.csv only where the ids name speakers,
    labels.csv where an stm reference defines labels, confidence.csv where a ctm has confidences)."""
    if names is None:
        return (*FILES, *[SPEAKERS] * speakers_named, *[LABELS] * subsets, *[CONFIDENCE] * confident)
    by_name = {f.name: f for f in OPTIONAL}
    picked = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in picked if n not in by_name]
    if unknown:
        raise ConfigError(f"--outputs: no file {', '.join(map(repr, unknown))}; choose among "
                          f"{', '.join(by_name)} (summary.csv and summary.json are always written)")
    if SPEAKERS.name in picked and not speakers_named:
        raise ConfigError(f"--outputs {SPEAKERS.name}: its speakers come from the utterance ids of trn files, the "
                          "part before the first - or _ (`text (speaker-utterance)`, as sclite's -i spu_id reads "
                          "them); these files have no such ids")
    if LABELS.name in picked and not subsets:
        raise ConfigError(f"--outputs {LABELS.name}: its subsets are the labels an stm reference defines (`;; LABEL "
                          "\"F\" \"Female\" \"description\"` lines, `<O,F>` before a segment's text, as sclite's -o "
                          "lur reads them); this reference defines none")
    if CONFIDENCE.name in picked and not confident:
        raise ConfigError(f"--outputs {CONFIDENCE.name}: its NCE is of the words' confidences a ctm hypothesis gives "
                          "(`file channel start duration word confidence` lines); these hypotheses have none")
    return tuple(by_name[n] for n in picked)


def subsets(definitions: labels.Defined | None, read: Read, ref_path: str) -> labels.Labelled | None:
    """What labels.csv counts; None, with the reason printed, where sclite's -o lur would stop."""
    if definitions is None or read.labels is None:
        return None
    try:
        carried, place_of = labels.carried_by(definitions, read.labels, ref_path)
    except ValueError as e:
        print(f"{LABELS.name} not written: {e}")
        return None
    return labels.Labelled(definitions, carried, place_of, read.speaker)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog=f"{program()} score",
                                description="Score hypotheses against references: WER with alignment breakdown.")
    p.add_argument("--ref", required=True,
                   help="references: one utterance per line, a sclite trn file, an stm file (name.stm, with ctm "
                        "hypotheses), a ctm file (name.ctm, with ctm hypotheses, chopped into utterances as sclite "
                        "chops them), or a Kaldi text file (with --format kaldi)")
    p.add_argument("--hyp", required=True, action="append", metavar="[NAME=]HYP",
                   help="hypotheses, in the same form as --ref (a ctm file, name.ctm, for an stm or a ctm); repeat "
                        "it to compare systems on the same references (each named NAME, or by its file's stem), "
                        f"paired by utterance: MAPSSWE, sign and Wilcoxon tests, Holm-corrected, in {COMPARISONS}; "
                        f"from trn, stm or ctm files, by speaker too, as sc_stats pairs them, in "
                        f"{SPEAKER_COMPARISONS}")
    dests = add_flags(p, ScoreConfig(), every_field=True, keys=False)
    p.add_argument("--language", default=None,
                   help="the references' language (ISO 639, as a run's --language): characters are the unit for "
                        f"{', '.join(language.CHARACTER_LANGUAGES)} (CER), words elsewhere (default en, or the "
                        "preset's)")
    p.add_argument("--preset", default=None, choices=recipes.names(),
                   help="score as a published recipe scores (its normalizer, headline and language); what it says "
                        "of the ASR is yours to keep: the hypotheses' engine is not known here")
    p.add_argument("--optional-words", action="store_true",
                   help="sclite -D: a word in parentheses, `(uh)`, is optional: left out it is correct, said it is its "
                        "word (with --normalize sclite or none, which keep the parentheses)")
    p.add_argument("--fragments", action="store_true",
                   help="sclite -F: a fragment, `th-` or `-ing`, is correct against a word it begins or ends (with "
                        "--normalize sclite or none); NIST's hubscr.pl scores with both")
    p.add_argument("--delete-hyphens", action="store_true",
                   help="sclite -c DH, where characters are the unit: a word's hyphens are deleted before it is cut "
                        "(`GPT-4` one unit, `gpt4`; with --normalize sclite or none); hubscr.pl scores Mandarin with "
                        "sclite -c NOASCII DH -D -F")
    p.add_argument("--glm", default=None, metavar="FILE",
                   help="a GLM (NIST's global mapping file) applied to both sides first, as hubscr.pl has csrfilt.sh "
                        "-dh apply it to trn, stm and ctm files (-t ref, -t hyp): upper case, its rules, hyphens "
                        "split; the alternations it writes into hypotheses are read as sclite reads them. The "
                        "--language picks csrfilt.sh's flags as hubscr.pl's -l does: "
                        + ", ".join(f"{code} ({w.name}) {w.csrfilt}" for code, w in hubscr.LANGUAGES.items()))
    for f in hubscr.FILTERS:
        p.add_argument(f.flag, action="store_true",
                       help=f"hubscr.pl's {f.hubscr} for Arabic (--language {hubscr.ARABIC}), with --glm: "
                            f"{f.script} on both sides before csrfilt.sh ({f.does})")
    p.add_argument("--reduce", action="append", choices=stm.REDUCTIONS, default=None,
                   help="sclite -m, for an stm and ctm files (repeat it for both): `ref` leaves out the segments "
                        "outside the time range of their channel's ctm words (a ctm of part of a recording), `hyp` "
                        "the ctm words outside the range of their channel's segments")
    p.add_argument("--ctm-chop", default=None, choices=chop.CHOPS,
                   help="for a ctm reference, which sclite's chop into utterances to follow: every released one's "
                        "(2.4.12 and before, Debian's 2.4.10; the default), or SCTK master's, which corrected a "
                        "duration it read from the wrong file (commit 82955db, not yet released) and moves some cuts")
    p.add_argument("--time-mediated", action="store_true",
                   help="sclite -T, for a ctm reference: each chunk aligned by its words' times (a word against "
                        "another weighs the distance of their starts and of their ends, a word left out or added its "
                        "duration), not by the words alone")
    p.add_argument("--format", default="auto", choices=FORMATS,
                   help="how the files are read: auto (default) tells plain, trn, and stm with ctm (by suffix) apart; "
                        "kaldi reads Kaldi text files, `id text` lines, paired by id as Kaldi's compute-wer pairs "
                        "them (with --normalize kaldi, counted as it counts them)")
    p.add_argument("--kaldi-mode", default=KALDI_MODES[0], choices=KALDI_MODES,
                   help="with --format kaldi, compute-wer's --mode: a reference with no hypothesis line stops the "
                        "scoring (strict, the default), is left out (present, as Kaldi's scoring scripts score), or "
                        "is scored as nothing heard (all); a hypothesis with no reference is left out")
    p.add_argument("--out", default="results/score", help="output directory (default results/score)")
    p.add_argument("--outputs", default=None, metavar="FILES",
                   help="comma-separated files to write besides summary.csv and summary.json, as sclite's -o picks "
                        f"its reports (default every one): {', '.join(f.name for f in OPTIONAL)}; a file left out "
                        "is not computed, and an earlier scoring's copy of it in --out is removed")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="processes that filter, resolve and score the pairs, a chunk at a time (default one per "
                        "core this process may use, a container's CPU quota included, at most "
                        f"{fanout.MAX_WORKERS}); every pair is scored alone, so the files are the same for any N")
    args = p.parse_args(argv)
    cfg, lang, comparable = ScoreConfig(), args.language or "en", None
    try:
        if args.workers is not None and args.workers < 1:
            raise ConfigError(f"--workers {args.workers}: give 1 or more processes (1 scores in this one)")
        if args.preset:
            values = preset(args.preset)
            cfg = apply(cfg, values.get("score", {}))
            lang = args.language or values.get("asr", {}).get("language", "en")
            comparable = recipes.scored_alone(args.preset, lang)
        cfg = apply(cfg, given(args, dests))
        check(cfg)
        rules = rules_of(args, cfg, lang)
        characters = characters_of(args, cfg, lang, rules)
        filters = filters_of(args, lang)
        glms = glms_of(args.glm, args.preset, lang, filters)
        kaldi = format_of(args)
        if rules or glms:
            comparable = Comparability(line=as_hubscr(rules, glms and glm.identity(args.glm), characters, lang,
                                                      cfg.normalize, filters, is_ctm(args.ref)))
        elif cfg.normalize in normalize.KALDI_COUNTED and not args.preset:
            comparable = Comparability(line=KALDI_LINE)
        hyps = systems(args.hyp)
        normalizer = normalize.for_language(cfg.normalize, lang, characters=characters or NOASCII)
        reduce, chopped = reduction(args), ctm_chop(args)
        if args.time_mediated and (not is_ctm(args.ref) or characters):
            raise ConfigError("--time-mediated: sclite -T aligns the words of a ctm reference and its ctm hypotheses "
                              "by their times" + (f", and {args.ref} is no .ctm file" if not is_ctm(args.ref) else
                                                  ", not characters cut from them") + "; leave --time-mediated out")
        if is_ctm(args.ref):  # which sclite's chop decides the utterances, and so the counts
            said = (comparable.line if comparable else "", chop.comparable(chopped, args.time_mediated))
            comparable = dataclasses.replace(comparable or Comparability(), line="; ".join(filter(None, said)))
        workers = fanout.default_workers() if args.workers is None else args.workers
        read = [(name, read_pairs(args.ref, path, normalizer, rules, glms, fold_ids=cfg.normalize == "sclite",
                                  kaldi=kaldi, reduce=reduce, ctm_chop=chopped, timed=args.time_mediated,
                                  workers=workers))
                for name, path in hyps]
        apart = ""  # why the systems' utterances cannot be paired, where only their speakers can
        for (_, path), (_, r) in zip(hyps[1:], read[1:]):
            if r.segments != read[0][1].segments:
                why = unpaired(args.ref, hyps[0][1], path, read[0][1].segments, r.segments)
                if not is_ctm(args.ref):
                    raise ConfigError(why)
                apart = apart or why
        if apart:
            print(f"note: {apart}")
        definitions = labels.defined(args.ref) if is_stm(args.ref) else None
        outputs = chosen(args.outputs, speakers_named=read[0][1].speaker is not None,
                         subsets=definitions is not None, confident=any(r.confident for _, r in read))
        labelled = subsets(definitions, read[0][1], args.ref) if LABELS in outputs else None
        if labelled is None:
            outputs = tuple(f for f in outputs if f is not LABELS)
        if len(hyps) > 1 and not {UTTERANCES, EVENTS} <= set(outputs):
            raise ConfigError(f"--outputs: comparing {len(hyps)} systems reads {UTTERANCES.name} and {EVENTS.name}; "
                              "name both, or leave --outputs out")
        marked = Marked()  # every system is scored against the same references: the first one's are counted
        pairs = of_systems([(name, marked.counting(r.pairs) if i == 0 else r.pairs)
                            for i, (name, r) in enumerate(read)])
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        speaker = read[0][1].speaker or speakers.speaker_of
        confidences = confidence.Confidences(speaker)
        results, n = stream(pairs, cfg, comparable=comparable, language=lang, out_dir=args.out, outputs=outputs,
                            workers=args.workers, speaker=speaker, labelled=labelled, confidences=confidences,
                            characters=characters or NOASCII)
        speaker_rows = records.read_csv(Path(args.out) / SPEAKERS.name, SPEAKERS.record) if SPEAKERS in outputs else []
        label_rows = records.read_csv(Path(args.out) / LABELS.name, LABELS.record) if LABELS in outputs else []
        confident = confidence.lines(confidences.rows(results.unit), confidences.unplaced, cfg.normalize) \
            if CONFIDENCE in outputs else []
        compared, by = compare(args.out, cfg, speaker_rows, by_utterance=not apart) if len(hyps) > 1 else ([], [])
        by_speaker = len(hyps) > 1 and bool(speaker_rows)
        for name, written in ((COMPARISONS, len(hyps) > 1 and not apart), (SPEAKER_COMPARISONS, by_speaker)):
            if not written:
                (Path(args.out) / name).unlink(missing_ok=True)  # an earlier scoring's, of other systems
    except OSError as e:
        print(f"error: cannot write --out {args.out} ({e.strerror}); free some space or pick another directory",
              file=sys.stderr)
        return 4
    print(summary_table(results.summary, n, macro_first=cfg.headline == "macro",
                        rate=results.rate))
    for line in speakers.spread(speaker_rows, results.rate) + labels.lines(label_rows, results.rate) + confident:
        print(line)
    for c in compared:
        print(c.verdict)
    for c in by:
        print(speaker_verdict(c))
    if len(hyps) > 1:
        print(f"paired comparisons by speaker: {args.out}/{SPEAKER_COMPARISONS}" if apart else
              f"paired comparisons: {args.out}/{COMPARISONS}"
              + (f", by speaker: {args.out}/{SPEAKER_COMPARISONS}" if by else ""))
    forgiven = marked.line(rules)
    if forgiven:
        print(forgiven)
    if comparable:
        print(f"{results.rate}: {comparable.line}")
    print(f"results in {args.out}/")
    return 0


COMMANDS.register(Command("score", "--ref REF --hyp HYP [options]",
                          "score your own transcripts against references; loads no model", main))
