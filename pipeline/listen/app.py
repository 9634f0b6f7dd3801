"""The listening test's web server (Starlette, served by uvicorn): the listener's page, their trials, the audio,
their votes; and the admin's view and results.

What it lets in, and what it keeps:
- a listener comes in through their own invitation link (192 random bits): the page's script starts a session
  with a POST (a GET makes nothing, so link previewers and reloads leave no trace); the session is an HttpOnly,
  SameSite=Strict cookie (Secure behind an https --url) for what they fetch, and a token of the session in every
  POST, whose Origin must be the server's own; the test keeps both only as hashes, and they expire; the admin's
  view and the results need a separate token, also kept as a hash;
- a listener's browser gets nothing that names a system, run, voice, engine or file: trials and clips are opaque
  ids, audio is served by clip id from the database, and only a clip of a trial assigned to that listener;
- every field of a POST is checked against the test's scale and the listener's own trials; bodies are at most
  BODY_LIMIT bytes (413, chunked or not), and a request with both Content-Length and Transfer-Encoding is refused;
- a vote counts only once the listener has played each of its clips to the end, as the server saw it (plays.py:
  the audio fetched, then play, then ended no sooner than the clip's length), and it is on disk before it is
  acknowledged (database.py); the same submission twice is stored once;
- the database is used off the event loop, each write waiting at most WAIT_S for a lock held elsewhere (then 503
  with Retry-After), so a busy file never stalls the pages and static files;
- every page is served with a strict Content-Security-Policy: no inline script, no other origin."""
from __future__ import annotations

import functools
import hashlib
import html
import json
import re
import secrets
import sqlite3
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from pipeline.listen import assign, database, plays, qualify
from pipeline.listen.database import Connections, Test, hashed, now
from pipeline.listen.kinds import KINDS, Kind

BODY_LIMIT = 4096  # bytes: a vote or a play event is a few dozen
WAIT_S = 2.0  # the longest a request waits for the test file's write lock before it is answered 503
ID = re.compile(r"[A-Za-z0-9_-]{16,64}")  # the ids this server makes: anything else is no clip, trial or invite
COOKIE = "listen_session"
HEADERS = [
    (b"content-security-policy", b"default-src 'none'; script-src 'self'; style-src 'self'; media-src 'self'; "
                                 b"connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; "
                                 b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"), (b"cache-control", b"no-store"),
    (b"cross-origin-resource-policy", b"same-origin")]


class Guard:
    """ASGI middleware: the security headers on every response; a request body read whole before the app sees it,
    and refused with 413 past BODY_LIMIT (chunked or not); a request that carries both Content-Length and
    Transfer-Encoding refused and its connection closed (RFC 9112 §6.3: what a proxy and this server take for its
    end could differ, and a second request be smuggled in its body)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        if b"transfer-encoding" in headers and b"content-length" in headers:
            return await refuse(send, 400, "Content-Length and Transfer-Encoding together", close=True)
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > BODY_LIMIT):
            return await refuse(send, 413, "request body too large", close=True)
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > BODY_LIMIT:
                return await refuse(send, 413, "request body too large", close=True)
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        async def headed(message):
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + HEADERS
            await send(message)
        await self.app(scope, replay, headed)


async def refuse(send, status: int, why: str, close: bool = False) -> None:
    body = json.dumps({"error": why}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *([(b"connection", b"close")] if close else []), *HEADERS]})
    await send({"type": "http.response.body", "body": body})


def error(status: int, why: str, **headers) -> JSONResponse:
    return JSONResponse({"error": why}, status_code=status, headers=headers or None)


def busy(work):
    """A request's database work, run off the event loop: a lock held elsewhere (an admin's SQLite browser, a
    second server, a long `invite`) delays only the requests that need the database, each at most WAIT_S, and
    then answers 503 with Retry-After instead of hanging."""
    @functools.wraps(work)
    async def run(*args):
        try:
            return await run_in_threadpool(work, *args)
        except sqlite3.OperationalError as e:
            if "locked" in str(e) or "busy" in str(e):
                return error(503, "the test's file is busy; try again in a moment", **{"retry-after": "1"})
            raise
    return run


@dataclass(frozen=True)
class Served:
    """What every endpoint of one test's app reads (app.state.served): the file, the test, its kind, the page's
    script and style, and the origin listeners reach it at."""
    db: Connections
    test: Test
    kind: Kind
    script: bytes
    style: bytes
    origin: str  # the scheme, host and port behind a proxy; "" for each request's own Host

    @property
    def secure(self) -> bool:
        return self.origin.startswith("https://")

    @property
    def plays(self) -> int:
        """Times each recording of a trial may be played to its end (0: any): the test's, else its kind's."""
        chosen = self.test.settings.get("plays")
        return self.kind.plays if chosen is None else chosen


def make(path: str | Path, origin: str = "") -> Guard:
    """The app for one test. `origin`: the scheme, host and port listeners reach it at, when a proxy stands in
    front (else each request's own Host); an https origin makes the session cookie Secure."""
    db = Connections(path, wait=WAIT_S)
    test = Test.read(db.get())
    static = files("pipeline.listen") / "static"
    app = Starlette(routes=ROUTES)
    app.state.served = Served(db, test, KINDS.get(test.kind), (static / "listen.js").read_bytes(),
                              (static / "listen.css").read_bytes(), origin)
    return Guard(app)


def served(request: Request) -> Served:
    return request.app.state.served


def shell(title: str, body: str, script: bool = False, status: int = 200) -> HTMLResponse:
    """Every page of the app: one document, its title and body (already escaped), its style and, for the
    listener's page, its script, both from /static (the CSP allows no inline code)."""
    return HTMLResponse(f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><link rel="stylesheet" href="/static/listen.css"></head><body>
<main>{body}</main>{'<script src="/static/listen.js"></script>' if script else ''}</body></html>""",
                        status_code=status)


def session_of(request: Request):
    value = request.cookies.get(COOKIE, "")
    return database.session(served(request).db.get(), value) if ID.fullmatch(value) else None


def posted(request: Request, csrf_sha256: str | None) -> JSONResponse | None:
    """Why a POST is refused: it comes from another origin, or without the session's token."""
    expected = served(request).origin or f"{request.url.scheme}://{request.headers.get('host', '')}"
    if request.headers.get("origin") != expected:
        return error(403, "a POST from another origin")
    if csrf_sha256 is not None and not secrets.compare_digest(
            hashed(request.headers.get("x-session-token", "")), csrf_sha256):
        return error(403, "no session token, or not this session's")
    return None


def assigned(conn: sqlite3.Connection, listener: int, trial: str):
    return conn.execute("SELECT t.*, a.position FROM assignments a JOIN trials t ON t.id = a.trial "
                        "WHERE a.listener = ? AND a.trial = ?", (listener, trial)).fetchone()


def invited(conn: sqlite3.Connection, invite: str):
    return conn.execute("SELECT * FROM listeners WHERE invite_sha256 = ?", (hashed(invite),)).fetchone() \
        if ID.fullmatch(invite) else None


@busy
def page(request: Request):
    """The page alone: a GET makes nothing (a link previewer, a reload); the page's script starts a session."""
    if invited(served(request).db.get(), request.path_params["invite"]) is None:
        return shell("Not found", "<p>No such invitation.</p>", status=404)
    name, kind = html.escape(served(request).test.name), served(request).kind
    once = f" You can play each recording {served(request).plays} time(s)." if served(request).plays else ""
    return shell(name, f"""<h1>{name}</h1>
<p class="how">{html.escape(kind.instructions)}{once} Use headphones in a quiet place. The first trials are
practice, to hear the range of what is coming.</p>
<progress id="bar" value="0" max="1"></progress><p id="progress"></p><p id="title"></p><div id="clips"></div>
<div id="answers"></div><p id="status"></p>""", script=True)


@busy
def begin(request: Request):
    """A listener starts: their session (a cookie) and its POST token, replacing any earlier one."""
    refused = posted(request, None)
    if refused:
        return refused
    conn = served(request).db.get()
    listener = invited(conn, request.path_params["invite"])
    if listener is None:
        return error(404, "no such invitation")
    session, csrf = database.start(conn, listener["id"])
    response = JSONResponse({"token": csrf})
    response.set_cookie(COOKIE, session, max_age=database.SESSION_HOURS * 3600, httponly=True, samesite="strict",
                        secure=served(request).secure, path="/")
    return response


@busy
def trial(request: Request):
    session = session_of(request)
    if session is None:
        return error(401, "no session: open your invitation link")
    test, kind, conn = served(request).test, served(request).kind, served(request).db.get()
    listener = conn.execute("SELECT * FROM listeners WHERE id = ?", (session["listener"],)).fetchone()
    assign.session(conn, listener["id"], test, listener["seed"], kind.each_sentence_once)
    total = conn.execute("SELECT count(*) FROM assignments WHERE listener = ?", (listener["id"],)).fetchone()[0]
    row = conn.execute("SELECT t.*, a.position FROM assignments a JOIN trials t ON t.id = a.trial "
                       "LEFT JOIN votes v ON v.listener = a.listener AND v.trial = a.trial "
                       "WHERE a.listener = ? AND v.trial IS NULL ORDER BY a.position LIMIT 1",
                       (listener["id"],)).fetchone()
    if row is None:
        return JSONResponse({"done": True, "total": total, "code": completion(listener)})
    clips = [row["first"]] if row["second"] is None else \
        [row["second"], row["first"]] if row["swapped"] else [row["first"], row["second"]]
    return JSONResponse({"done": False, "trial": row["id"], "position": row["position"] + 1, "total": total,
                         "clips": clips, "plays": served(request).plays, "practice": row["role"] == "training",
                         **(qualify.of(row["sentence_id"]).page() if row["role"] == qualify.ROLE
                            else kind.page(clips))})


def completion(listener) -> str:
    """The code a listener who answered every trial is shown, for a crowd platform to check: made from their
    invitation's hash, which only the test's file holds."""
    return hashlib.sha256(f"done:{listener['invite_sha256']}".encode()).hexdigest()[:10].upper()


async def listener_post(request: Request, work):
    """A listener's POST: refused without a session, from another origin or without its token; else `work`
    (the app's state, session, body) off the event loop."""
    try:
        data = json.loads(await request.body())
    except (ValueError, UnicodeDecodeError):
        data = None

    def checked():
        session = session_of(request)
        if session is None:
            return error(401, "no session: open your invitation link")
        refused = posted(request, session["csrf_sha256"])
        return refused or work(served(request), session, data if isinstance(data, dict) else None)
    return await busy(checked)()


def play(state: Served, session, data):
    if data is None or set(data) != {"trial", "clip", "event"} or data["event"] not in ("play", "ended") \
            or not all(isinstance(data[k], str) and ID.fullmatch(data[k]) for k in ("trial", "clip")):
        return error(422, "expected {trial, clip, event: play or ended}")
    conn = state.db.get()
    row = assigned(conn, session["listener"], data["trial"])
    if row is None or data["clip"] not in (row["first"], row["second"]):
        return error(404, "no such clip in your trials")
    sent = conn.execute("SELECT count(*) FROM plays WHERE listener = ? AND trial = ?",
                        (session["listener"], data["trial"])).fetchone()[0]
    if sent >= plays.EVENTS_PER_TRIAL:
        return error(429, f"at most {plays.EVENTS_PER_TRIAL} play events a trial")
    if state.plays:  # each end closes one play, and no more plays end than the test allows
        counts = dict(conn.execute("SELECT event, count(*) FROM plays WHERE listener = ? AND trial = ? AND clip = ? "
                                   "GROUP BY event", (session["listener"], data["trial"], data["clip"])).fetchall())
        if data["event"] == "play" and counts.get("ended", 0) >= state.plays:
            return error(409, f"this recording may be played {state.plays} time(s) only")
        if data["event"] == "ended" and counts.get("ended", 0) >= counts.get("play", 0):
            return error(409, "no play of this recording to end")
    conn.execute("INSERT INTO plays (listener, trial, clip, event, at) VALUES (?,?,?,?,?)",
                 (session["listener"], data["trial"], data["clip"], data["event"], now()))
    if data["event"] == "ended":  # the page enables the answers from the server's own record, not its own
        return JSONResponse({"ok": True, "heard": heard(conn, session["listener"], row, data["clip"])})
    return JSONResponse({"ok": True})


def vote(state: Served, session, data):
    kind = state.kind
    if data is None or set(data) != {"trial", "value", "submission"} or not isinstance(data["trial"], str) \
            or not isinstance(data["submission"], str) or not ID.fullmatch(data["submission"]):
        return error(422, f"expected {{trial, value, submission}}, {kind.expects}")
    listener, conn = session["listener"], state.db.get()
    row = assigned(conn, listener, data["trial"])
    if row is None:
        return error(404, "no such trial in your trials")
    # a qualification trial is answered in its check's own widget, whatever the kind
    asked = qualify.of(row["sentence_id"]) if row["role"] == qualify.ROLE else kind
    refused = asked.refused(data["value"])
    if refused:
        return error(422, refused)
    if not heard(conn, listener, row):
        return error(409, "play every recording of this trial to its end first")
    value, text = asked.stored(data["value"])
    # one statement, one transaction, fsynced before it returns: a vote acknowledged is a vote kept, and the
    # same vote sent twice (a double click, a retry after a lost answer) is stored once
    stored = conn.execute("INSERT INTO votes (listener, trial, value, text, submission, at) VALUES (?,?,?,?,?,?) "
                          "ON CONFLICT (listener, trial) DO NOTHING",
                          (listener, data["trial"], value, text, data["submission"], now())).rowcount
    if not stored:
        kept = conn.execute("SELECT value, text FROM votes WHERE listener = ? AND trial = ?",
                            (listener, data["trial"])).fetchone()
        if (kept["value"], kept["text"]) != (value, text):
            return error(409, "this trial is answered already")
    return JSONResponse({"ok": True, "again": not stored})


@busy
def clip(request: Request):
    session = session_of(request)
    cid = request.path_params["clip"]
    if session is None:
        return error(401, "no session: open your invitation link")
    if not ID.fullmatch(cid):
        return error(404, "no such clip")
    conn = served(request).db.get()
    row = conn.execute("SELECT c.audio FROM clips c JOIN trials t ON c.id IN (t.first, t.second) "
                       "JOIN assignments a ON a.trial = t.id WHERE a.listener = ? AND c.id = ? LIMIT 1",
                       (session["listener"], cid)).fetchone()
    if row is None:
        return error(404, "no such clip in your trials")
    conn.execute("INSERT INTO plays (listener, trial, clip, event, at) SELECT ?, '', ?, 'fetched', ? WHERE NOT "
                 "EXISTS (SELECT 1 FROM plays WHERE listener = ? AND trial = '' AND clip = ?)",
                 (session["listener"], cid, now(), session["listener"], cid))
    return Response(row["audio"], media_type="audio/wav")


def admitted(request: Request) -> bool:
    given = request.query_params.get("token", "") or request.headers.get("authorization", "").removeprefix(
        "Bearer ")
    # read each time: `listen admin` makes a new token while the server runs
    found = served(request).db.get().execute("SELECT admin_sha256 FROM test").fetchone()[0]
    return secrets.compare_digest(hashed(given), found)


@busy
def admin(request: Request):
    if not admitted(request):
        return error(403, "the admin token is needed")
    test, conn = served(request).test, served(request).db.get()
    listeners = conn.execute("SELECT l.name, l.invite_sha256, count(v.trial) AS votes, (SELECT count(*) FROM "
                             "assignments a WHERE "
                             "a.listener = l.id) AS trials FROM listeners l LEFT JOIN votes v ON v.listener = "
                             "l.id GROUP BY l.id ORDER BY l.id").fetchall()
    counts = conn.execute("SELECT t.role, count(v.trial) AS votes, count(DISTINCT t.id) AS trials FROM trials t "
                          "LEFT JOIN votes v ON v.trial = t.id GROUP BY t.role").fetchall()
    rows = "".join(f"<tr><td>{html.escape(r['name'])}</td><td>{r['votes']} of {r['trials']}</td>"
                   f"<td>{completion(r) if r['trials'] and r['votes'] >= r['trials'] else ''}</td></tr>"
                   for r in listeners)
    roles = "".join(f"<tr><td>{r['role']}</td><td>{r['trials']}</td><td>{r['votes']}</td></tr>" for r in counts)
    typed = conn.execute("SELECT l.name, v.text FROM votes v JOIN listeners l ON l.id = v.listener WHERE v.text IS "
                         "NOT NULL ORDER BY v.at DESC LIMIT 20").fetchall()
    latest = ("<p>The latest typed answers, as typed:</p><table><tr><th>listener</th><th>answer</th></tr>" +
              "".join(f"<tr><td>{html.escape(r['name'])}</td><td>{html.escape(r['text'])}</td></tr>" for r in typed)
              + "</table>") if typed else ""
    name = html.escape(test.name)
    return shell(f"{name}: progress", f"""<h1>{name}: progress</h1><p>{html.escape(test.kind)} test,
{test.votes_per_clip} votes asked for each clip.</p>
<table><tr><th>listener</th><th>votes</th><th>completion code</th></tr>{rows}</table>
<table><tr><th>trials</th><th>how many</th><th>votes</th></tr>{roles}</table>{latest}
<p>The analysis: <code>listen results</code>, or results.json with the same token.</p>""")


@busy
def results(request: Request):
    if not admitted(request):
        return error(403, "the admin token is needed")
    from pipeline.listen import analysis

    return JSONResponse(analysis.analyse(served(request).db.get()).as_json())


async def javascript(request: Request):
    return Response(served(request).script, media_type="text/javascript")


async def css(request: Request):
    return Response(served(request).style, media_type="text/css")


async def played(request: Request):
    return await listener_post(request, play)


async def voted(request: Request):
    return await listener_post(request, vote)


ROUTES = [Route("/l/{invite}", page), Route("/l/{invite}/start", begin, methods=["POST"]),
          Route("/api/trial", trial), Route("/api/play", played, methods=["POST"]),
          Route("/api/vote", voted, methods=["POST"]), Route("/audio/{clip}", clip),
          Route("/static/listen.js", javascript), Route("/static/listen.css", css),
          Route("/admin", admin), Route("/admin/results.json", results)]


def heard(conn: sqlite3.Connection, listener: int, trial, clip: str | None = None) -> bool:
    """Every recording of the trial (or the one `clip`) played to its end, as plays.heard reads the server's record
    of it."""
    events = [plays.Event(r["clip"], r["event"], r["at"]) for r in conn.execute(
        "SELECT clip, event, at FROM plays WHERE listener = ? AND trial IN (?, '') ORDER BY at, rowid",
        (listener, trial["id"]))]
    clips = [clip] if clip else [c for c in (trial["first"], trial["second"]) if c]
    seconds = dict(conn.execute(f"SELECT id, seconds FROM clips WHERE id IN ({','.join('?' * len(clips))})",
                                clips).fetchall())
    return all(plays.heard(events, c, seconds[c]) for c in clips)
