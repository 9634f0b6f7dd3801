"""One SQLite database per listening test, and the only state a test has: its settings, clips (with their audio),
trials, listeners, assignments, votes and play events, each with its time. A restarted server carries on from it.

Once a vote is acknowledged it is on disk: the database runs in WAL mode with synchronous=FULL, so every commit
is fsynced before the server answers. A repeated submission (a double click, a retry after a lost answer) is
stored once: a vote is keyed by its listener and trial."""
from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import InputError

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
    audio BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS trials (
    id TEXT PRIMARY KEY, role TEXT NOT NULL,
    first TEXT NOT NULL REFERENCES clips(id), second TEXT REFERENCES clips(id),
    swapped INTEGER NOT NULL,       -- pairs: the listener hears `second` first
    expected INTEGER,               -- gold and trapping trials: the answer, as the trial reads once oriented
    sentence_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS listeners (
    id INTEGER PRIMARY KEY,
    invite_sha256 TEXT UNIQUE NOT NULL,  -- of the invitation: a copy of the file lets no one in
    name TEXT UNIQUE NOT NULL, created REAL NOT NULL, seed INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    token TEXT PRIMARY KEY, csrf TEXT NOT NULL, listener INTEGER NOT NULL REFERENCES listeners(id),
    created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS assignments (
    listener INTEGER NOT NULL REFERENCES listeners(id), position INTEGER NOT NULL,
    trial TEXT NOT NULL REFERENCES trials(id), PRIMARY KEY (listener, position), UNIQUE (listener, trial));
CREATE TABLE IF NOT EXISTS votes (
    listener INTEGER NOT NULL REFERENCES listeners(id), trial TEXT NOT NULL REFERENCES trials(id),
    value INTEGER NOT NULL, submission TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (listener, trial));
CREATE TABLE IF NOT EXISTS plays (
    listener INTEGER NOT NULL REFERENCES listeners(id), trial TEXT NOT NULL, clip TEXT NOT NULL,
    event TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS plays_by ON plays (listener, trial, clip, event);
CREATE TABLE IF NOT EXISTS calibrations (
    measure TEXT PRIMARY KEY, fit TEXT NOT NULL, made REAL NOT NULL);
"""


def token(nbytes: int = 24) -> str:
    """A secret for a URL: 24 random bytes, 192 bits (a listener's invitation, a session, the admin's)."""
    return secrets.token_urlsafe(nbytes)


def connect(path: str | Path, create: bool = False) -> sqlite3.Connection:
    path = Path(path)
    if not create and not path.is_file():
        raise InputError(f"{path}: no such listening test; make one with `listen create`")
    conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")  # a commit is on disk before it returns: acknowledged means kept
    conn.execute("PRAGMA foreign_keys=ON")
    if create:
        conn.executescript(SCHEMA)
    elif conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'test'").fetchone()[0] == 0:
        raise InputError(f"{path}: not a listening test (no test table); make one with `listen create`")
    return conn


class Connections:
    """One connection per thread of the server, each opened on first use."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        connect(self.path).close()  # refused now, not on the first request, when it is not a test
        self.local = threading.local()

    def get(self) -> sqlite3.Connection:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = connect(self.path)
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
