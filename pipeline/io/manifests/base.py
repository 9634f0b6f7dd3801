"""What every manifest reader shares: the recording it yields, the declaration it makes, and the checks and
path rules all formats follow (relative paths from the manifest's folder; ids unique per system; a line that does
not parse is an error naming the file, the line and what was expected)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from pipeline.core.records import utterance_id
from pipeline.errors import InputError
from pipeline.io.inputs import read_text


NATURAL = ("natural", "natural_audio", "gt_wav", "ground_truth_audio")  # a natural recording of the same sentence


class ManifestError(InputError):
    pass


@dataclass(frozen=True)
class Recording:
    """One utterance to evaluate: its audio (a whole file, or `duration` seconds from `offset`), what was said,
    and optionally the system that made it, the speaker it should sound like and a natural recording of the same
    sentence (what MCD and F0 error measure against)."""
    id: str
    audio_path: str
    reference: str
    speaker_reference: str = ""
    system: str = ""  # the TTS system that made it; becomes the row's voice ("" for plain recordings)
    offset: float = 0.0
    duration: float | None = None  # None: to the end of the file
    problem: str = ""  # why this row's audio cannot be had (a Kaldi utterance without a wav.scp entry)
    natural: str = ""
    language: str = ""  # what the manifest says was spoken (Common Voice's locale, NeMo's lang); "" when it says not

    @property
    def cut(self) -> bool:
        return self.offset > 0 or self.duration is not None


@dataclass(frozen=True)
class Format:
    name: str
    doc: str  # one line for --help (--manifest-format): what the format is and what it reads
    detect: Callable[[Path], bool]  # whether a path (file or folder) is in this format
    read: Callable[["Reading"], list[tuple[int, Recording]]]  # (line, recording) pairs
    rank: int = 0  # tried from the most specific format down; the plain table accepts anything, last
    needs_audio_dir: bool = False  # rows name no audio file: it is <id>.wav in --audio-dir
    # --audio-dir may hold the generated <id>.wav, the manifest's own audio then being the natural recordings
    takes_audio_dir: bool = False
    # what a path that is nearly in this format lacks ("metadata.csv has no file_name column"), or None: said when
    # detection finds no format
    near: Callable[[Path], str | None] = lambda path: None


@dataclass(frozen=True)
class Unused:
    """A line of a manifest's file that no recording comes from, or a file the manifest does not name."""
    path: str
    line: int | None
    what: str  # the line's id, or the file's name
    why: str

    def __str__(self) -> str:
        return f"{self.path}" + (f" line {self.line}" if self.line else "") + f" ({self.what}): {self.why}"


@dataclass(frozen=True)
class Reading:
    """One manifest being read: its path (a file, or a folder for folder formats), --audio-dir, and what the
    reader passed over."""
    path: Path
    audio_dirs: dict[str, Path]  # system → folder of <id>.wav
    unused: list[Unused] = field(default_factory=list)  # what a reader passed over, said to the user

    def error(self, line: int | None, message: str, path: Path | None = None) -> ManifestError:
        where = f"{path or self.path}" + (f" line {line}" if line else "")
        return ManifestError(f"--audio-manifest {where}: {message}")

    def skip(self, path: Path, line: int | None, what: str, why: str) -> None:
        self.unused.append(Unused(str(path), line, what, why))

    def text(self, path: Path | None = None) -> str:
        return read_text(path or self.path, "--audio-manifest")

    def lines(self, path: Path | None = None) -> Iterable[tuple[int, str]]:
        """Numbered non-blank lines, without their line ending."""
        for n, line in enumerate(self.text(path).splitlines(), 1):
            if line.strip():
                yield n, line

    def json_lines(self, path: Path | None = None) -> Iterable[tuple[int, dict]]:
        for n, line in self.lines(path):
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise self.error(n, f"not a JSON object ({e.msg} at column {e.colno}); expected one JSON object "
                                    "per line (JSON Lines)", path) from None
            if not isinstance(row, dict):
                raise self.error(n, f"a JSON {type(row).__name__}, not an object; expected one object per line",
                                 path)
            yield n, row


def unnamed(reading: Reading, rows: list[tuple[int, Recording]], manifest: str) -> None:
    """Each wav of an --audio-dir folder that no row names, noted as passed over."""
    named = {Path(r.audio_path).name for _, r in rows}
    for system, folder in reading.audio_dirs.items():
        for wav in sorted(folder.glob("*.wav")):
            if wav.name not in named:
                reading.skip(folder, None, wav.name, f"a wav of system {system!r} that no line of {manifest} names")


def beside(manifest: Path, name: str) -> str:
    """A path from a manifest: relative ones are taken from the manifest's folder."""
    if not name:
        return ""
    path = Path(name).expanduser()
    return str(path if path.is_absolute() else manifest.parent / path)


def first(row: dict, names: tuple[str, ...]) -> str | None:
    """The value of the first of `names` the row has, case-insensitively; None when it has none of them."""
    lowered = {str(k).strip().lower(): v for k, v in row.items()}
    for name in names:
        if name in lowered and lowered[name] is not None:
            return str(lowered[name]).strip()
    return None


def seconds(reading: Reading, line: int, value, what: str) -> float | None:
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not number >= 0:
        raise reading.error(line, f"{what} {value!r} is not a number of seconds ≥ 0")
    return number


def checked(reading: Reading, rows: list[tuple[int, Recording]]) -> list[Recording]:
    """The rows, once every id is usable: non-empty, free of NUL, unique per system, and one reference per id
    (the sentences table holds one text per id, which every system's recording of it is scored against)."""
    seen: set[tuple[str, str]] = set()
    texts: dict[str, str] = {}
    named: dict[str, str] = {}  # a row's id in every file (core/records.py utterance_id) → the id it came from
    for n, r in rows:
        if not r.id:
            raise reading.error(n, "empty id; give every row an id")
        if "\0" in r.id:
            raise reading.error(n, f"the id {r.id!r} holds a NUL character, which no text id has (a damaged or "
                                  "binary file?); mend that line")
        if (r.system, r.id) in seen:
            raise reading.error(n, f"duplicate id {r.id!r}" + (f" for system {r.system!r}" if r.system else "") +
                               "; ids must be unique" + (" per system" if r.system else ""))
        seen.add((r.system, r.id))
        for given, name in ((r.id, utterance_id(sentence_id=r.id, voice="_")),
                            (r.system, utterance_id(sentence_id="_", voice=r.system))):
            if given and named.setdefault(name, given) != given:
                raise reading.error(n, f"{given!r} and {named[name]!r} would be one name in every file this tool "
                                      "writes (an id holds no space, and `_`, `:` and `=` inside a name are "
                                      "written `-`, `-` and nothing); rename one")
        if texts.setdefault(r.id, r.reference) != r.reference:
            raise reading.error(n, f"id {r.id!r} has another reference than on an earlier line ({texts[r.id]!r}); "
                                  "each id is one sentence, whichever system spoke it")
    if not rows:
        raise reading.error(None, "empty manifest: no recordings in it")
    return [r for _, r in rows]
