"""The listening test's web server (Starlette, served by uvicorn): the listener's page, their trials, the audio,
their votes; and the admin's view and results.

What it lets in, and what it keeps:
- a listener comes in through their own invitation link (192 random bits) and from then on carries a session:
  an HttpOnly, SameSite=Strict cookie for what they fetch, and a token of the session in every POST, whose Origin
  must be the server's own; the admin's view and the results need a separate token, which the test keeps only as
  a hash;
- a listener's browser gets nothing that names a system, run, voice, engine or file: trials and clips are opaque
  ids, audio is served by clip id from the database, and only a clip of a trial assigned to that listener;
- every field of a POST is checked against the test's scale and the listener's own trials, and bodies are at
  most BODY_LIMIT bytes;
- a vote counts only once the listener has played each of its clips to the end (the server keeps the play
  events), and it is on disk before it is acknowledged (store.py); the same submission twice is stored once;
- every page is served with a strict Content-Security-Policy: no inline script, no other origin."""
from __future__ import annotations

import html
import json
import re
import secrets
from importlib.resources import files
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from pipeline.listen import assign
from pipeline.listen.kinds import KINDS
from pipeline.listen.store import Connections, Test, hashed, now, token

BODY_LIMIT = 4096  # bytes: a vote or a play event is a few dozen
ID = re.compile(r"[A-Za-z0-9_-]{16,64}")  # the ids this server makes: anything else is no clip, trial or invite
COOKIE = "listen_session"
HEADERS = [
    (b"content-security-policy", b"default-src 'none'; script-src 'self'; style-src 'self'; media-src 'self'; "
                                 b"connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; "
                                 b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"), (b"cache-control", b"no-store"),
    (b"cross-origin-resource-policy", b"same-origin")]


class Guard:
    """ASGI middleware: the security headers on every response, and no request body over BODY_LIMIT."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > BODY_LIMIT):
            return await refuse(send, 413, "request body too large")
        seen = 0

        async def limited():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > BODY_LIMIT:
                raise TooLarge
            return message

        async def headed(message):
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + HEADERS
            await send(message)
        try:
            await self.app(scope, limited, headed)
        except TooLarge:
            await refuse(headed, 413, "request body too large")


class TooLarge(Exception):
    pass


async def refuse(send, status: int, why: str) -> None:
    body = json.dumps({"error": why}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *HEADERS]})
    await send({"type": "http.response.body", "body": body})


def error(status: int, why: str) -> JSONResponse:
    return JSONResponse({"error": why}, status_code=status)


def make(path: str | Path, origin: str = "") -> Starlette:
    """The app for one test. `origin`: the scheme, host and port listeners reach it at, when a proxy stands in
    front (else each request's own Host)."""
    db = Connections(path)
    test = Test.read(db.get())
    kind = KINDS.get(test.kind)
    static = files("pipeline.listen") / "static"
    script, style = (static / "listen.js").read_bytes(), (static / "listen.css").read_bytes()

    def session_of(request: Request):
        value = request.cookies.get(COOKIE, "")
        if not ID.fullmatch(value):
            return None
        return db.get().execute("SELECT * FROM sessions WHERE token = ?", (value,)).fetchone()

    def posted(request: Request, session) -> JSONResponse | None:
        """Why a POST is refused: it comes from another origin, or without the session's token."""
        expected = origin or f"{request.url.scheme}://{request.headers.get('host', '')}"
        if request.headers.get("origin") != expected:
            return error(403, "a POST from another origin")
        if not secrets.compare_digest(request.headers.get("x-session-token", ""), session["csrf"]):
            return error(403, "no session token, or not this session's")
        return None

    def assigned(listener: int, trial: str):
        return db.get().execute("SELECT t.*, a.position FROM assignments a JOIN trials t ON t.id = a.trial "
                                "WHERE a.listener = ? AND a.trial = ?", (listener, trial)).fetchone()

    def page(request: Request):
        invite = request.path_params["invite"]
        conn = db.get()
        listener = conn.execute("SELECT * FROM listeners WHERE invite_sha256 = ?", (hashed(invite),)).fetchone() \
            if ID.fullmatch(invite) else None
        if listener is None:
            return HTMLResponse("<!DOCTYPE html><title>Not found</title><p>No such invitation.</p>", status_code=404)
        session, csrf = token(), token()
        conn.execute("INSERT INTO sessions VALUES (?,?,?,?)", (session, csrf, listener["id"], now()))
        body = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="session-token" content="{csrf}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(test.name)}</title><link rel="stylesheet" href="/static/listen.css"></head><body>
<main><h1>{html.escape(test.name)}</h1>
<p class="how">Listen to each recording to its end; then you can answer. Use headphones in a quiet place.</p>
<p id="progress"></p><p id="title"></p><div id="clips"></div><div id="answers"></div><p id="status"></p></main>
<script src="/static/listen.js"></script></body></html>"""
        response = HTMLResponse(body)
        response.set_cookie(COOKIE, session, httponly=True, samesite="strict", path="/")
        return response

    def trial(request: Request):
        session = session_of(request)
        if session is None:
            return error(401, "no session: open your invitation link")
        conn = db.get()
        listener = conn.execute("SELECT * FROM listeners WHERE id = ?", (session["listener"],)).fetchone()
        assign.session(conn, listener["id"], test, listener["seed"])
        total = conn.execute("SELECT count(*) FROM assignments WHERE listener = ?", (listener["id"],)).fetchone()[0]
        row = conn.execute("SELECT t.*, a.position FROM assignments a JOIN trials t ON t.id = a.trial "
                           "LEFT JOIN votes v ON v.listener = a.listener AND v.trial = a.trial "
                           "WHERE a.listener = ? AND v.trial IS NULL ORDER BY a.position LIMIT 1",
                           (listener["id"],)).fetchone()
        if row is None:
            return JSONResponse({"done": True, "total": total})
        clips = [row["first"]] if row["second"] is None else \
            [row["second"], row["first"]] if row["swapped"] else [row["first"], row["second"]]
        return JSONResponse({"done": False, "trial": row["id"], "position": row["position"] + 1, "total": total,
                             "title": kind.title, "clips": clips,
                             "names": ["Reference", "Recording"] if kind.reference else
                             ["First", "Second"] if len(clips) == 2 else ["Recording"],
                             "scale": [[v, f"{v} {label}" if not kind.pair else label] for v, label in kind.scale]})

    async def body_of(request: Request) -> dict | None:
        try:
            data = json.loads(await request.body())
        except (ValueError, UnicodeDecodeError):
            return None
        return data if isinstance(data, dict) else None

    async def listener_post(request: Request):
        """(the session, the body) of a listener's POST, or why it is refused."""
        session = session_of(request)
        if session is None:
            return None, None, error(401, "no session: open your invitation link")
        refused = posted(request, session)
        return (None, None, refused) if refused else (session, await body_of(request), None)

    async def play(request: Request):
        session, data, refused = await listener_post(request)
        if refused:
            return refused
        if data is None or set(data) != {"trial", "clip", "event"} or data["event"] not in ("play", "ended") \
                or not all(isinstance(data[k], str) and ID.fullmatch(data[k]) for k in ("trial", "clip")):
            return error(422, "expected {trial, clip, event: play or ended}")
        row = assigned(session["listener"], data["trial"])
        if row is None or data["clip"] not in (row["first"], row["second"]):
            return error(404, "no such clip in your trials")
        db.get().execute("INSERT INTO plays VALUES (?,?,?,?,?)",
                         (session["listener"], data["trial"], data["clip"], data["event"], now()))
        return JSONResponse({"ok": True})

    async def vote(request: Request):
        session, data, refused = await listener_post(request)
        if refused:
            return refused
        if data is None or set(data) != {"trial", "value", "submission"} or not isinstance(data["trial"], str) \
                or not isinstance(data["submission"], str) or not ID.fullmatch(data["submission"]) \
                or type(data["value"]) is not int or data["value"] not in kind.values:
            return error(422, f"expected {{trial, value, submission}}, value one of {list(kind.values)}")
        listener = session["listener"]
        row = assigned(listener, data["trial"])
        if row is None:
            return error(404, "no such trial in your trials")
        conn = db.get()
        heard = {r[0] for r in conn.execute("SELECT clip FROM plays WHERE listener = ? AND trial = ? AND event = "
                                            "'ended'", (listener, data["trial"]))}
        if not {row["first"], row["second"]} - {None} <= heard:
            return error(409, "play every recording of this trial to its end first")
        # one statement, one transaction, fsynced before it returns: a vote acknowledged is a vote kept, and the
        # same vote sent twice (a double click, a retry after a lost answer) is stored once
        stored = conn.execute("INSERT INTO votes VALUES (?,?,?,?,?) ON CONFLICT (listener, trial) DO NOTHING",
                              (listener, data["trial"], data["value"], data["submission"], now())).rowcount
        if not stored:
            kept = conn.execute("SELECT value FROM votes WHERE listener = ? AND trial = ?",
                                (listener, data["trial"])).fetchone()
            if kept["value"] != data["value"]:
                return error(409, "this trial is rated already")
        return JSONResponse({"ok": True, "again": not stored})

    def clip(request: Request):
        session = session_of(request)
        cid = request.path_params["clip"]
        if session is None:
            return error(401, "no session: open your invitation link")
        if not ID.fullmatch(cid):
            return error(404, "no such clip")
        row = db.get().execute("SELECT c.audio FROM clips c JOIN trials t ON c.id IN (t.first, t.second) "
                               "JOIN assignments a ON a.trial = t.id WHERE a.listener = ? AND c.id = ? LIMIT 1",
                               (session["listener"], cid)).fetchone()
        if row is None:
            return error(404, "no such clip in your trials")
        return Response(row["audio"], media_type="audio/wav")

    def admitted(request: Request) -> bool:
        given = request.query_params.get("token", "") or request.headers.get("authorization", "").removeprefix(
            "Bearer ")
        # read each time: `listen admin` makes a new token while the server runs
        return secrets.compare_digest(hashed(given), db.get().execute("SELECT admin_sha256 FROM test").fetchone()[0])

    def admin(request: Request):
        if not admitted(request):
            return error(403, "the admin token is needed")
        conn = db.get()
        listeners = conn.execute("SELECT l.name, count(v.trial) AS votes, (SELECT count(*) FROM assignments a WHERE "
                                 "a.listener = l.id) AS trials FROM listeners l LEFT JOIN votes v ON v.listener = "
                                 "l.id GROUP BY l.id ORDER BY l.id").fetchall()
        counts = conn.execute("SELECT t.role, count(v.trial) AS votes, count(DISTINCT t.id) AS trials FROM trials t "
                              "LEFT JOIN votes v ON v.trial = t.id GROUP BY t.role").fetchall()
        rows = "".join(f"<tr><td>{html.escape(r['name'])}</td><td>{r['votes']} of {r['trials']}</td></tr>"
                       for r in listeners)
        roles = "".join(f"<tr><td>{r['role']}</td><td>{r['trials']}</td><td>{r['votes']}</td></tr>" for r in counts)
        return HTMLResponse(f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>{html.escape(test.name)}: progress</title><link rel="stylesheet" href="/static/listen.css"></head><body><main>
<h1>{html.escape(test.name)}: progress</h1><p>{html.escape(test.kind)} test, {test.votes_per_clip} votes asked for
each clip.</p><table><tr><th>listener</th><th>votes</th></tr>{rows}</table>
<table><tr><th>trials</th><th>how many</th><th>votes</th></tr>{roles}</table>
<p>The analysis: <code>listen results</code>, or results.json with the same token.</p></main></body></html>""")

    def results(request: Request):
        if not admitted(request):
            return error(403, "the admin token is needed")
        from pipeline.listen import analysis

        return JSONResponse(analysis.analyse(db.get()).as_json())

    routes = [Route("/l/{invite}", page), Route("/api/trial", trial), Route("/api/play", play, methods=["POST"]),
              Route("/api/vote", vote, methods=["POST"]), Route("/audio/{clip}", clip),
              Route("/static/listen.js", lambda request: Response(script, media_type="text/javascript")),
              Route("/static/listen.css", lambda request: Response(style, media_type="text/css")),
              Route("/admin", admin), Route("/admin/results.json", results)]
    app = Starlette(routes=routes)
    return Guard(app)
