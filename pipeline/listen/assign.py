"""Which trials a listener rates, and in which order: balanced, so that every trial reaches the votes the test
asks for, and shuffled for each listener. Drawn once, when a listener first asks, and kept: a listener who
closes the page and opens their link again carries on at their next trial."""
from __future__ import annotations

import random
import sqlite3

from pipeline.listen.store import Test


def session(conn: sqlite3.Connection, listener: int, test: Test, seed: int) -> None:
    """The listener's trials: the training set first, then the test trials least assigned so far with the gold
    and trapping trials among them, in an order of the listener's own."""
    if conn.execute("SELECT 1 FROM assignments WHERE listener = ?", (listener,)).fetchone():
        return  # drawn already: no write lock to take on every trial fetched
    conn.execute("BEGIN IMMEDIATE")  # one listener at a time draws, so the counts it balances are true
    try:
        if conn.execute("SELECT 1 FROM assignments WHERE listener = ?", (listener,)).fetchone():
            conn.execute("COMMIT")
            return
        rng = random.Random(seed)
        counts = {row[0]: row[1] for row in conn.execute(
            "SELECT t.id, count(a.trial) FROM trials t LEFT JOIN assignments a ON a.trial = t.id GROUP BY t.id")}
        roles = {row[0]: row[1] for row in conn.execute("SELECT id, role FROM trials")}

        def least(role: str, k: int) -> list[str]:
            members = [t for t, r in roles.items() if r == role]
            rng.shuffle(members)  # ties broken at random, for this listener
            return sorted(members, key=lambda t: counts[t])[:k]

        training = [row[0] for row in conn.execute("SELECT id FROM trials WHERE role = 'training' ORDER BY rowid")]
        rated = least("test", test.trials_per_session) + least("gold", test.settings["gold_per_session"]) + \
            least("trap", test.settings["traps_per_session"])
        rng.shuffle(rated)
        conn.executemany("INSERT INTO assignments VALUES (?,?,?)",
                         [(listener, position, trial) for position, trial in enumerate(training + rated)])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
