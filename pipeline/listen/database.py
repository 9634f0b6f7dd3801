"""One SQLite database per listening test, and the only state a test has: its settings, clips (with their audio),
trials, listeners, assignments, votes and play events, each with its time. A restarted server carries on from it.

Once a vote is acknowledged it is on disk: the database runs in WAL mode with synchronous=FULL, so every commit
is fsynced before the server answers. A repeated submission (a double click, a retry after a lost answer) is
stored once: a vote is keyed by its listener and trial.

The file holds no secret that lets anyone in: invitations, sessions, their POST tokens and the admin token are kept
as sha256 hashes, and a session expires (SESSION_HOURS). The file and its -wal and -shm are the owner's alone
(0600). A file is checked before anything writes to it: a damaged one, another program's SQLite file or a test
made by a newer version of the tool is an InputError naming the file, and is left as it was."""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import InputError

# PRAGMA user_version: 0 was the first, which kept its sessions in clear (they are dropped on opening); 2 added the
# typed answer of a vote (votes.text), and what the runs' engines heard of a clip and their LM's perplexity of it
# (clips.heard, clips.perplexity, clips.surprisal)
VERSION = 2
SESSION_HOURS = 12  # a listener's session, from when they started it; their link starts a new one
HEADER = b"SQLite format 3\x00"
SESSIONS = """CREATE TABLE IF NOT EXISTS sessions (
    token_sha256 TEXT PRIMARY KEY, csrf_sha256 TEXT NOT NULL, listener INTEGER NOT NULL REFERENCES listeners(id),
    created REAL NOT NULL, expires REAL NOT NULL)"""
SCHEMA = """
CREATE TABLE IF NOT EXISTS test (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    name TEXT NOT NULL, kind TEXT NOT NULL, created REAL NOT NULL,
    votes_per_clip INTEGER NOT NULL, trials_per_session INTEGER NOT NULL, admin_sha256 TEXT NOT NULL,
    settings TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS clips (
    id TEXT PRIMARY KEY,            -- opaque: all a listener's browser ever sees of it
    role TEXT NOT NULL,             -- test, gold, trap, training or reference
    system TEXT NOT NULL,           -- the run and voice it came from ("" for what the tool made)
    run TEXT NOT NULL, run_folder TEXT NOT NULL, voice TEXT NOT NULL, sentence_id TEXT NOT NULL,
    utterance_id TEXT NOT NULL, reference_text TEXT NOT NULL,
    source_sha256 TEXT NOT NULL,    -- the run's audio file it was made from
    audio_sha256 TEXT NOT NULL,     -- what the listeners hear (16-bit WAV)
    seconds REAL NOT NULL,
    measures TEXT NOT NULL,         -- the run's automatic measures of this audio, JSON
    audio BLOB NOT NULL,
    heard TEXT NOT NULL DEFAULT '{}',  -- each of the run's engines' transcript of this audio, JSON
    perplexity REAL,                -- the run's LM's perplexity of the sentence
    surprisal TEXT NOT NULL DEFAULT '[]');  -- its LM surprisal of each word (listen/typed.py's words), JSON
CREATE TABLE IF NOT EXISTS trials (
    id TEXT PRIMARY KEY, role TEXT NOT NULL,
    first TEXT NOT NULL REFERENCES clips(id), second TEXT REFERENCES clips(id),
    swapped INTEGER NOT NULL,       -- pairs: the listener hears `second` first
    expected,                       -- gold and trapping trials: the answer, as the trial reads once oriented
                                    -- (a typed word for a transcription test's trap)
    sentence_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS listeners (
    id INTEGER PRIMARY KEY,
    invite_sha256 TEXT UNIQUE NOT NULL,  -- of the invitation: a copy of the file lets no one in
    name TEXT UNIQUE NOT NULL, created REAL NOT NULL, seed INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS assignments (
    listener INTEGER NOT NULL REFERENCES listeners(id), position INTEGER NOT NULL,
    trial TEXT NOT NULL REFERENCES trials(id), PRIMARY KEY (listener, position), UNIQUE (listener, trial));
CREATE TABLE IF NOT EXISTS votes (
    listener INTEGER NOT NULL REFERENCES listeners(id), trial TEXT NOT NULL REFERENCES trials(id),
    value INTEGER,                  -- an answer on a scale
    text TEXT,                      -- or what the listener typed, verbatim (NFC)
    submission TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (listener, trial),
    CHECK ((value IS NULL) <> (text IS NULL)));
CREATE TABLE IF NOT EXISTS plays (
    listener INTEGER NOT NULL REFERENCES listeners(id), trial TEXT NOT NULL, clip TEXT NOT NULL,
    event TEXT NOT NULL, at REAL NOT NULL);  -- fetched (the server sent the audio; trial ""), play or ended
CREATE INDEX IF NOT EXISTS plays_by ON plays (listener, trial, clip, event);
CREATE TABLE IF NOT EXISTS calibrations (
    measure TEXT PRIMARY KEY, fit TEXT NOT NULL, made REAL NOT NULL);
""" + SESSIONS + ";\n"


def token(nbytes: int = 24) -> str:
    """A secret for a URL: 24 random bytes, 192 bits (a listener's invitation, a session, the admin's)."""
    return secrets.token_urlsafe(nbytes)


def connect(path: str | Path, create: bool = False, timeout: float = 30) -> sqlite3.Connection:
    """The test's database, checked first (`check`); `timeout`: how long a write waits for another's lock."""
    path = Path(path)
    if create:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))  # an empty file, or create's temporary one
        os.chmod(path, 0o600)  # the -wal and -shm SQLite makes beside it take its mode
    else:
        check(path)
    conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")  # a commit is on disk before it returns: acknowledged means kept
    conn.execute("PRAGMA foreign_keys=ON")
    if create:
        conn.executescript(SCHEMA)
        conn.execute(f"PRAGMA user_version = {VERSION}")
    else:
        upgrade(conn, path)
    return conn


def check(path: Path) -> None:
    """InputError, naming the file and what is wrong, unless it is a listening test this version can open; read
    only, so that a file refused is a file unchanged (not even its journal mode)."""
    fix = "give the TEST.db that `listen create` made, or make one"
    if not path.is_file():
        raise InputError(f"{path}: no such listening test; make one with `listen create`")
    with open(path, "rb") as f:
        head = f.read(100)
    if not head.startswith(HEADER):
        raise InputError(f"{path}: not a listening test: not an SQLite database at all (damaged, or another kind of "
                         f"file); {fix}")
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            damage = [r[0] for r in conn.execute("PRAGMA quick_check(5)")]
        finally:
            conn.close()
    except sqlite3.DatabaseError as e:
        raise InputError(f"{path}: a damaged database ({e}): cut short or overwritten; restore it from a copy, "
                         f"or {fix}") from None
    if damage != ["ok"]:
        raise InputError(f"{path}: a damaged database ({'; '.join(damage)}); restore it from a copy (sqlite3's "
                         f".recover may save its votes)")
    if "test" not in tables:
        raise InputError(f"{path}: not a listening test (another program's SQLite database: it has no test table); "
                         f"{fix}")
    if version > VERSION:
        raise InputError(f"{path}: made by a newer version of this tool (schema {version}; this one reads up to "
                         f"{VERSION}); open it with that version")


def upgrade(conn: sqlite3.Connection, path: Path) -> None:
    """A test made by an earlier version, brought to this one: its sessions, kept in clear then, are dropped (a
    listener's link starts a new one, and they carry on where they stopped); its files made the owner's alone."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version < VERSION:
        conn.execute("BEGIN IMMEDIATE")
        if version < 1:
            conn.execute("DROP TABLE IF EXISTS sessions")
            conn.execute(SESSIONS)
        # a test of an earlier version rates on a scale: its votes keep their values, and have no text
        for table, column in (("votes", "text TEXT"), ("clips", "heard TEXT NOT NULL DEFAULT '{}'"),
                              ("clips", "perplexity REAL"), ("clips", "surprisal TEXT NOT NULL DEFAULT '[]'")):
            if column.split()[0] not in {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
        conn.execute(f"PRAGMA user_version = {VERSION}")
        conn.execute("COMMIT")
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            if name.exists() and name.stat().st_mode & 0o077 and name.stat().st_uid == os.getuid():
                os.chmod(name, 0o600)
        except OSError:
            pass


class Connections:
    """One connection per thread of the server, each opened on first use; a write waits at most `wait` seconds
    for a lock held elsewhere (sqlite3.OperationalError after that, which the server answers with 503)."""

    def __init__(self, path: str | Path, wait: float = 30):
        self.path = Path(path)
        self.wait = wait
        connect(self.path).close()  # refused now, not on the first request, when it is not a test
        self.local = threading.local()

    def get(self) -> sqlite3.Connection:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = sqlite3.connect(self.path, timeout=self.wait, isolation_level=None,
                                                     check_same_thread=False)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
        return conn


@dataclass(frozen=True)
class Test:
    name: str
    kind: str
    votes_per_clip: int
    trials_per_session: int
    settings: dict

    @classmethod
    def read(cls, conn: sqlite3.Connection) -> Test:
        row = conn.execute("SELECT * FROM test").fetchone()
        return cls(row["name"], row["kind"], row["votes_per_clip"], row["trials_per_session"],
                   json.loads(row["settings"]))


def hashed(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def invite(conn: sqlite3.Connection, name: str) -> str:
    """A listener's invitation (their link's secret), made now and kept only as its hash; a name invited again
    gets a new one, and the old link stops working (their votes stay theirs)."""
    secret = token()
    # their order is drawn from the test's seed and their name: the same listeners, the same orders
    seed = int(hashed(f"{Test.read(conn).settings['seed']}:{name}")[:8], 16)
    conn.execute("INSERT INTO listeners (invite_sha256, name, created, seed) VALUES (?,?,?,?) ON CONFLICT (name) "
                 "DO UPDATE SET invite_sha256 = excluded.invite_sha256", (hashed(secret), name, now(), seed))
    conn.execute("DELETE FROM sessions WHERE listener = (SELECT id FROM listeners WHERE name = ?)", (name,))
    return secret


def start(conn: sqlite3.Connection, listener: int) -> tuple[str, str]:
    """A new session for a listener who opened their link and started: (its cookie, its POST token), kept only as
    hashes. It replaces the listener's earlier one (a reload, another browser): a listener has one session, so
    the table holds at most one row a listener, and none expired."""
    session, csrf = token(), token()
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("DELETE FROM sessions WHERE listener = ? OR expires < ?", (listener, now()))
        conn.execute("INSERT INTO sessions (token_sha256, csrf_sha256, listener, created, expires) VALUES "
                     "(?,?,?,?,?)", (hashed(session), hashed(csrf), listener, now(), now() + SESSION_HOURS * 3600))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return session, csrf


def session(conn: sqlite3.Connection, cookie: str):
    """The live session of a cookie, or None."""
    return conn.execute("SELECT * FROM sessions WHERE token_sha256 = ? AND expires > ?",
                        (hashed(cookie), now())).fetchone()


def new_admin_token(conn: sqlite3.Connection) -> str:
    """A new admin token; the old one stops working."""
    secret = token()
    conn.execute("UPDATE test SET admin_sha256 = ?", (hashed(secret),))
    return secret


def now() -> float:
    return round(time.time(), 3)


def fingerprint(path: str | Path) -> dict:
    """What the analysis of a test depends on, cheaply: its votes so far (a report shows them again only when
    they changed)."""
    conn = connect(path)
    try:
        count, last = conn.execute("SELECT count(*), max(at) FROM votes").fetchone()
        plays = conn.execute("SELECT count(*) FROM plays").fetchone()[0]
        clips = conn.execute("SELECT count(*), group_concat(audio_sha256) FROM clips").fetchone()
        return {"votes": count, "last": last, "plays": plays, "clips": clips[0],
                "audio": hashlib.sha256((clips[1] or "").encode()).hexdigest()[:16]}
    finally:
        conn.close()
