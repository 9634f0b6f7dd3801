"""A GLM (NIST's global mapping file) applied as sctk's `csrfilt.sh -i trn|stm|ctm -t ref|hyp -dh GLM` applies it,
before scoring: NIST's hubscr.pl filters both sides so, then scores with sclite -D -F. The rules are rfilter1's
(sctk's doc/GLMRules.txt): `A => B` or `A => B / C __ D`, tried in the file's order at each character of the text,
the first whose A, with C before it and D after it in the text as given, lines up there writing B and moving past A;
a character no rule takes is copied. Around them csrfilt upper-cases a-z (as hubscr.pl's language asks: not in Arabic
or Italian, and Latin-1's à-ÿ too in Spanish and German: scoring/hubscr.py), spaces out parentheses, splits
hyphenated words (`-dh`), cuts an optionally deletable group into one group a word (`(a b)` → `(a) (b)`) and leaves
one space between words. A `;; INPUT_DEPENDENT_APPLICATION = "<regex>"` line makes the rules after it apply only
where the regex matches the input's format (`trn`, `stm`, `ctm`) or its side (`ref`, `hyp`): NIST's English GLMs
expand a hypothesis' contractions into alternations (`{ SHE'S / SHE IS / SHE HAS }`), which sclite, and `score`, then
read as a reference's. A ctm is filtered a word at a time, and csrfilt writes a word rewritten into several with its
line's time shared among them (ctm_words).

Each step is sctk's, quirks kept, and the tests hold every output to csrfilt.sh's on random texts and rules. The
text is rfilter1's bytes (UTF-8), seen one byte a character, matched without case where the GLM asks, in A-Z alone,
as C's strncasecmp matches."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Callable, NamedTuple

LINE_LENGTH = 131  # what rfilter1 reads of a GLM line (a 132-byte buffer): a longer one it would cut in two
MAX_NRULES = 400  # rfilter1's room for rules where the file does not say (`* max_nrules = '2500'`)
FORMAT = "NIST1"  # the one format rfilter1 applies
SIDES = ("ref", "hyp")
_SPACE = " \t\n\v\f\r"  # C's isspace
_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_LATIN1_UPPER = {c: c - 32 for c in range(0xE0, 0x100)}  # csrfilt.sh -e's tr/\340-\377/\300-\337/
_SECTION = re.compile(r'^;;\s+INPUT_DEPENDENT_APPLICATION\s*=\s*"([^"]*)"')


class Rule(NamedTuple):
    source: str  # A
    target: str  # B
    before: str  # C
    after: str  # D


class Csrfilt(NamedTuple):
    """csrfilt.sh's flags besides -i, -t and -dh (which hubscr.pl always gives), as hubscr.pl sets them by language
    (scoring/hubscr.py)."""
    upcase: bool = True  # without -s
    extended: bool = False  # -e: Latin-1's à-ÿ upper-cased as well, as csrfilt does a Latin-1 file's bytes


class Glm:
    """The rules csrfilt.sh gives rfilter1 for one side of one format, and how they match; `flags`: csrfilt.sh's;
    `before`: steps each text takes first, as hubscr.pl pipes Arabic through hamzaNorm.pl and tanweenFilt.pl."""

    def __init__(self, rules: tuple[Rule, ...], case_sensitive: bool, flags: Csrfilt = Csrfilt(),
                 before: tuple[Callable[[str], str], ...] = ()) -> None:
        self.rules, self.case_sensitive, self.flags, self.before = rules, case_sensitive, flags, before
        self._trie = _trie(rules, self._key)
        self._next = re.compile(_pattern(self._trie), re.DOTALL) if self._trie else None

    def _key(self, text: str) -> str:
        """What rules are matched against: the text itself, or its A-Z folded (C's strncasecmp)."""
        return text if self.case_sensitive else text.translate(_UPPER)

    def rewrite(self, text: str) -> str:
        """rfilter1 on one line of text (what no rule takes copied: read() refuses a GLM that would drop it). At
        each character the rules whose A starts there are found by walking a trie of the A's, and the first of
        them in the file's order whose contexts hold fires."""
        key, out, i, n = self._key(text), [], 0, len(text)
        while i < n:
            start = self._next.search(key, i) if self._next else None
            if start is None:  # no rule's A starts anywhere after i: the rest is copied
                out.append(text[i:])
                break
            out.append(text[i:start.start()])
            i = start.start()
            node, j, found = self._trie, i, []
            while j < n and key[j] in node:
                node = node[key[j]]
                j += 1
                found += node.get(_END, ())
            rule = next((r for _, r in sorted(found) if i >= len(r.before)
                         and key.startswith(r.before, i - len(r.before))
                         and key.startswith(r.after, i + len(r.source))), None)
            if rule is None:
                out.append(text[i])
                i += 1
            else:
                out.append(rule.target)
                i += len(rule.source)
        return "".join(out)

    def filter(self, text: str, padded: bool = True) -> str:
        """csrfilt.sh's filtering of a trn or stm line's text (`padded`: as csrfilt cuts it from the line, a space
        either side) or of a ctm line's word (not padded): ValueError where its optionally deletable parentheses
        are nested or unpaired, as csrfilt refuses the file, or where `before` leaves nothing of a ctm's word.
        Upper-cased as `flags` say, and hyphens split (-dh)."""
        given = text
        for step in self.before:
            text = step(text)
        if not padded and not text.strip():
            raise ValueError(f"nothing is left of the word {given!r} after hubscr.pl's filters, and csrfilt.sh "
                             "would read the line's next field as its word; take the line out, or leave the filter out")
        if self.flags.upcase and self.flags.extended:
            text = text.translate(_LATIN1_UPPER)
        raw = _BLANKS.sub(" ", f" {_bytes(text)} " if padded else _bytes(text))
        if ("(" in raw or ")" in raw) and _unpaired(raw):
            raise ValueError(f"{text!r}: parentheses nested or unpaired (csrfilt.sh filters only texts whose every `(` "
                             "closes before the next opens)")
        line = raw.translate(_UPPER) if self.flags.upcase else raw
        line = " " + line.replace("(", "( ").replace(")", " )") + " \n"
        line = self.rewrite(line)
        if "-" in line:
            line = _HYPHEN.sub(r"\1 ", line)
        changed = "(" in line
        while changed:
            line, changed = _OPTIONAL_RUN.subn(r"\1) ( \2", line, count=1)
        line = _LAST_SPACE.sub("", line.removeprefix(" "), count=1)
        if "(" in line:
            line = _CLOSING.sub(")", _OPENING.sub("(", line))
        return _text(_BLANKS.sub(" ", line.rstrip("\n")).strip(" \t"))


class Timed(NamedTuple):
    """A ctm word as csrfilt.sh writes it back: its start and duration as written (a word it rewrote into several
    has its line's duration shared among them, each time printed to the millisecond) and the word."""
    start: str
    duration: str
    word: str


def ctm_words(fields: list[str], text: str) -> list[list[list[Timed]]]:
    """What csrfilt.sh -i ctm writes for a ctm line (`fields`: file, channel, start, duration, word, and what follows,
    its times numbers: stm.read_ctm checks them) whose word the GLM made `text`: each entry its ways (one, or an
    alternation's: `{ A / B C }`), each way its words. A line csrfilt leaves whole keeps its times as written; one
    it rewrites has each way's words share the duration, and loses a confidence no word of it can hold (its last
    field, if a number, is taken for one, as csrfilt takes it). ValueError for an alternative of no word, where
    csrfilt's Perl divides by zero."""
    ways, _ = _ctm_ways(fields, text)
    return [ways] if len(ways) > 1 else [[[w]] for w in ways[0]] if ways else []


def ctm_output(fields: list[str], text: str) -> list[list[str]]:
    """The lines, as their fields, that csrfilt.sh -i ctm writes for the line of ctm_words: a line it leaves whole as
    it stands, or each word on a line of its own with the line's confidence, an alternation's ways in an
    <ALT_BEGIN> block, as sclite reads a ctm's alternations (mark lines' times `*`)."""
    ways, confidence = _ctm_ways(fields, text)
    head = fields[:2]
    if confidence is None:
        return [[*head, w.start, w.duration, w.word] for way in ways for w in way]
    tail = [confidence] if confidence else []
    if len(ways) <= 1:
        return [[*head, w.start, w.duration, w.word, *tail] for way in ways for w in way]
    out = [[*head, "*", "*", "<ALT_BEGIN>"]]
    for k, way in enumerate(ways):
        out += [[*head, "*", "*", "<ALT>"]] * bool(k) + [[*head, w.start, w.duration, w.word, *tail] for w in way]
    return out + [[*head, "*", "*", "<ALT_END>"]]


def _ctm_ways(fields: list[str], text: str) -> tuple[list[list[Timed]], str | None]:
    """csrfilt.sh's ctm step: the ways it writes for the line, and the confidence it writes after each word (None
    where it writes the line as it stands, "" where it writes none)."""
    tokens = [*fields[:4], *re.sub(r"([{}])", r" \1 ", text).split(), *fields[5:]]
    if len(tokens) == 5:
        return [[Timed(tokens[2], tokens[3], tokens[4])]], None
    numeric = bool(re.fullmatch(r"[0-9.-]*", tokens[-1]))
    last = len(tokens) - 1 - numeric
    sets = " ".join(tokens[4:last + 1]).split("/")
    while sets and not sets[-1]:
        sets.pop()  # Perl's split drops empty trailing fields
    ways = []
    for way in sets:
        words = way.replace("{", "").replace("}", "").split()
        if not words:
            raise ValueError(f"{text!r}: an alternative of no word (csrfilt.sh divides the duration by its words)")
        share = float(tokens[3]) / len(words)
        ways.append([Timed(f"{float(tokens[2]) + share * k:.3f}", f"{share:.3f}", w) for k, w in enumerate(words)])
    return ways, tokens[-1] if numeric else ""


# csrfilt.sh's Perl steps; its \s is ASCII's, as Perl's is on bytes
_BLANKS = re.compile(r"[ \t]+")
_HYPHEN = re.compile(r"([^( ])-(?=[^) ])")
_OPTIONAL_RUN = re.compile(r"(\(\s+[^()\s]+\s+)([^()\s]+)", re.ASCII)
_LAST_SPACE = re.compile(r" $")
_OPENING, _CLOSING = re.compile(r"\(\s+", re.ASCII), re.compile(r"\s+\)", re.ASCII)


def _bytes(text: str) -> str:
    return text.encode("utf-8").decode("latin-1")


def _text(line: str) -> str:
    return line.encode("latin-1").decode("utf-8", errors="replace")


def _unpaired(raw: str) -> bool:
    """csrfilt.sh's check of the parentheses, step by step."""
    spaced = " " + raw.replace("(", "( ").replace(")", " )") + " "
    spaced = spaced.replace("(", "   (").replace(")", ")  ", 1)
    return bool(re.search(r"[()]", re.sub(r"\s\([^()]+\)", "", spaced, flags=re.ASCII)))


_END = ""  # a trie node's key for the rules whose A ends there (no character is the empty string)


def _trie(rules: tuple[Rule, ...], key) -> dict:
    """The rules' A's (keyed as the text is) as a trie, each node's rules as (their place in the file, the rule
    with its A and contexts keyed). A rule whose A is empty never fires in rfilter1 (its index files it under the
    string's end) and is left out."""
    root: dict = {}
    for k, r in enumerate(rules):
        if not r.source:
            continue
        node = root
        for c in key(r.source):
            node = node.setdefault(c, {})
        node.setdefault(_END, []).append((k, Rule(key(r.source), r.target, key(r.before), key(r.after))))
    return root


def identity(path: str | Path) -> str:
    """The GLM as a scoring records it: its path, and its bytes' digest (a GLM is revised under the same name)."""
    return f"{path} (sha256 {hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]})"


def _pattern(node: dict) -> str:
    """A regex that matches where some A of the trie starts (the trie written as nested alternatives, each
    starting with its character, which Python's regex engine tests before entering it): where it finds nothing,
    no rule can fire, and the text is copied up to the next place it does."""
    branches = [re.escape(c) + _pattern(child) for c, child in node.items() if c != _END]
    if not branches:
        return ""
    alternatives = branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
    return f"(?:{alternatives})?" if _END in node else alternatives


def read(path: str | Path, side: str, input_format: str = "trn", flags: Csrfilt = Csrfilt(),
         before: tuple[Callable[[str], str], ...] = ()) -> Glm:
    """The rules of the GLM at `path` that csrfilt.sh gives rfilter1 for `side` (ref or hyp) of an `input_format`
    file, filtering as `flags` and `before` say (Glm's). ValueError says what rfilter1 or csrfilt would stop at, and
    on which line, or that the file is not UTF-8, as the texts are, where its rules would never match them."""
    data = Path(path).read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ValueError(f"line {line}: not UTF-8 (byte 0x{data[e.start]:02x}), and the texts are read as UTF-8, "
                         "so its rules could not match them; convert it as the texts were (`iconv -f latin1 -t "
                         "utf-8`, or `-f gb2312` for NIST's Mandarin GLMs)") from None
    lines = data.decode("latin-1").split("\n")
    if lines == [""]:
        raise ValueError("the file is empty")
    kept, applies = [], True
    for n, line in enumerate(lines, 1):
        section = _SECTION.match(line)
        if section:
            wanted = section.group(1).lower()
            applies = bool(re.search(wanted, input_format.lower()) or re.search(wanted, side.lower()))
        if applies:
            kept.append((n, line))
    for n, line in kept:
        if len(line.rstrip("\r")) > LINE_LENGTH:
            raise ValueError(f"line {n}: longer than the {LINE_LENGTH} characters rfilter1 reads of a line")
    (_, first), *body = kept
    flag = re.match(r"[!-~]*", first).group()  # rfilter1's comment mark: the first line's first token
    settings = {"format": FORMAT, "max_nrules": MAX_NRULES, "copy_no_hit": True, "case_sensitive": True}
    rules: list[Rule] = []
    for n, line in body:
        line = line.rstrip(_SPACE)
        if not line or (flag and line.startswith(flag)):
            continue
        if line.startswith("*"):
            _setting(line, settings, n)
            continue
        if flag and flag in line:
            line = line[:line.index(flag)] + " " * (len(line) - line.index(flag))
        rules.append(_rule(line, n))
        if len(rules) > settings["max_nrules"]:
            raise ValueError(f"line {n}: rule {len(rules)}, past the file's max_nrules ({settings['max_nrules']}; "
                             f"rfilter1's default is {MAX_NRULES}): raise it in the file, `* max_nrules = '2500'`")
    if settings["format"] != FORMAT:
        raise ValueError(f"format {settings['format']!r}: rfilter1 applies {FORMAT} rules only")
    if not settings["copy_no_hit"]:
        raise ValueError("copy_no_hit is false: rfilter1 would drop each line's end too, and csrfilt.sh run the "
                         "whole file into one line; NIST's GLMs copy what no rule takes (`* copy_no_hit = 'T'`)")
    return Glm(tuple(rules), settings["case_sensitive"], flags, before)


def _setting(line: str, settings: dict, n: int) -> None:
    """An auxiliary line, `* NAME = "value"`, read as rfilter1 reads it: the value runs from the first quote of
    either kind to the next, and every keyword the line holds anywhere takes it."""
    quote = re.search("[\"']", line)
    if quote is None:
        raise ValueError(f"line {n}: {line.strip()!r} has no quoted value (`* copy_no_hit = 'T'`)")
    value = re.match("[^\"']*", line[quote.end():]).group()
    upper = line.translate(_UPPER)
    truth = value.upper() in ("T", "YES", "TRUE")
    for key, given in (("FORMAT", value), ("COPY_NO_HIT", truth), ("CASE_SENSITIVE", truth)):
        if key in upper:
            settings[key.lower()] = given
    if "MAX_NRULES" in upper:
        number = re.match(r"\s*[+-]?\d*", value).group().strip()
        settings["max_nrules"] = int(number) if number not in ("", "+", "-") else 0


def _rule(line: str, n: int) -> Rule:
    """One rule, cut from its line as rfilter1 cuts it: `=>` the first arrow; the context, after the last `/`
    unless a `[` comes after it before any `]`, split at the first `_` after it; each field stripped of its
    spaces and of one pair of `[ ]` or `" "` around it."""
    if not line.strip(_SPACE):
        raise ValueError(f"line {n}: nothing but a comment that does not start the line: rfilter1 stops at it; "
                         "start comment lines with the file's comment mark")
    arrow = line.find("=>")
    if arrow < 0:
        raise ValueError(f"line {n}: {line.strip()!r} has no `=>`")
    slash, slot = line.rfind("/"), -1
    if slash >= 0:
        closing, opening = line.find("]", slash), line.find("[", slash)
        if closing < opening:  # rfilter1 compares the two pointers, a missing one NULL: below any found
            slash = -1
        else:
            slot = line.find("_", slash)
    last = len(line.rstrip(_SPACE)) - 1
    start = len(line) - len(line.lstrip(_SPACE))
    source = ""
    if start < arrow:
        end = arrow - 1
        while end > start and line[end] in _SPACE:
            end -= 1
        source = _unbracketed(line, start, end)
    if slash < 0:
        end = last
    else:
        end = slash - 1
        while line[end] in _SPACE and end > arrow:
            end -= 1
    target = _field(line, arrow, end)
    before = after = ""
    if slash >= 0 and slot >= 0:
        end = slot - 1
        while line[end] in _SPACE and end > slash:
            end -= 1
        before = _field(line, slash, end)
        after = _field(line, slot, last)
    return Rule(source, target, before, after)


def _field(line: str, start: int, end: int) -> str:
    """rfilter1's field after a marker at `start` (the arrow, the slash, the slot): past the marker's characters,
    then past spaces, to `end`."""
    while line[start] not in _SPACE and start < end:
        start += 1
    if start >= end:
        return ""
    while line[start] in _SPACE:
        start += 1
    return _unbracketed(line, start, end)


def _unbracketed(line: str, start: int, end: int) -> str:
    if (line[start], line[end]) in (("[", "]"), ('"', '"')):
        start, end = start + 1, end - 1
    return line[start:end + 1] if end >= start else ""
