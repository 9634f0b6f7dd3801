"""Which trials a listener rates, and in which order: balanced, so that every trial reaches the votes the test
asks for, and shuffled for each listener. Drawn once, when a listener first asks, and kept: a listener who
closes the page and opens their link again carries on at their next trial."""
from __future__ import annotations

import random
import sqlite3
from collections import Counter

from pipeline.listen.database import Test


def session(conn: sqlite3.Connection, listener: int, test: Test, seed: int, once: bool = False) -> None:
    """The listener's trials: the hearing check (a test made with --qualify), the training set, then the test
    trials least assigned so far with the gold and trapping trials among them, each sentence as few times as the
    balance allows and never twice in a row where it can be helped, in an order of the listener's own. `once`
    (a kind whose listeners would answer a sentence again from memory, Kind.each_sentence_once): no two test
    trials of a listener are of one sentence, so a session holds at most one trial a sentence, and the systems and
    conditions of a sentence go to different listeners (a Latin square, as dictation tests are laid out)."""
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
        roles, sentence = {}, {}
        for trial, role, sentence_id in conn.execute("SELECT id, role, sentence_id FROM trials ORDER BY rowid"):
            roles[trial], sentence[trial] = role, sentence_id
        first = [t for t, r in roles.items() if r == "qualification"] + [t for t, r in roles.items()
                                                                        if r == "training"]
        used = Counter(sentence[t] for t in first)

        def least(role: str, k: int, once: bool = False) -> list[str]:
            """The k trials least assigned so far, and among those the ones whose sentences this listener has
            heard least; ties broken at random, for this listener. `once`: none of a sentence already chosen."""
            members = [t for t, r in roles.items() if r == role]
            rng.shuffle(members)
            chosen = []
            for _ in range(min(k, len(members))):
                free = [t for t in members if t not in chosen and not (once and used[sentence[t]])]
                if not free:
                    break
                best = min(free, key=lambda t: (counts[t], used[sentence[t]]))
                chosen.append(best)
                used[sentence[best]] += 1
            return chosen

        rated = least("test", test.trials_per_session, once) + least("gold", test.settings["gold_per_session"]) + \
            least("trap", test.settings["traps_per_session"])
        rng.shuffle(rated)
        rated = apart(rated, sentence)
        conn.executemany("INSERT INTO assignments (listener, position, trial) VALUES (?,?,?)",
                         [(listener, position, trial) for position, trial in enumerate(first + rated)])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def apart(order: list[str], sentence: dict[str, str]) -> list[str]:
    """The same trials, reordered so that no two in a row are of one sentence where another order allows it."""
    left, out = list(order), []
    while left:
        at = next((i for i, t in enumerate(left) if not out or sentence[t] != sentence[out[-1]]), 0)
        out.append(left.pop(at))
    return out
