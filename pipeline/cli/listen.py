"""`run_pipeline.py listen`: a listening test from a team's own listeners, in the browser (pipeline/listen/).

    listen create TEST.db RUN [RUN ...]   a test of the runs' clips (MOS by default), with P.808's training,
                                          gold and trapping trials, every clip at one rate and level; prints
                                          the admin token, once
    listen invite TEST.db NAME [NAME ...] one link per listener (192 random bits each)
    listen serve TEST.db                  the test on http://127.0.0.1:8124 (another address needs --url)
    listen results TEST.db                MOS with CIs, who was left out and why, each measure against the
                                          listeners, and a calibration.json for `assess.calibration`
    listen admin TEST.db                  a new admin token for the progress page and results.json

Exit codes: 0 done, 2 a bad input (named, with the fix); 70 an internal error."""
from __future__ import annotations

import argparse
import ipaddress
import sys
from pathlib import Path
from urllib.parse import urlsplit

from pipeline.cli.command import COMMANDS, Command, program
from pipeline.errors import ConfigError

PORT = 8124
REFUSED = 2


def parser() -> argparse.ArgumentParser:
    from pipeline.listen.kinds import KINDS

    p = argparse.ArgumentParser(prog=f"{program()} listen",
                                description="Listening tests: MOS, SMOS, CMOS, A/B preference and typed transcription "
                                            "from your own listeners, each test one SQLite file.")
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    c = sub.add_parser("create", help="make a test from one or more finished runs")
    c.add_argument("db", metavar="TEST.db", help="the test's file (made now; it must not exist)")
    c.add_argument("runs", nargs="+", metavar="RUN", help="results folders (results/v1) or run names")
    kinds = "; ".join(f"{k.name}: {k.summary}" for k in KINDS.all())
    c.add_argument("--kind", default="mos", choices=KINDS.names(), help=f"the test ({kinds}); default mos")
    c.add_argument("--name", help="the title listeners see (default: the file's name)")
    c.add_argument("--votes-per-clip", type=int, default=10, help="votes each trial should get (P.808: 10)")
    c.add_argument("--trials", type=int, default=20, help="test trials in a listener's session (default 20)")
    c.add_argument("--sentences", type=int, default=0, help="at most this many sentences, drawn (default: all)")
    c.add_argument("--condition", default="clean", help="the runs' condition whose audio is rated (default clean)")
    c.add_argument("--plays", type=int, default=None, metavar="N",
                   help="times a listener may play each recording of a trial (0: as often as they like; default: "
                        "the kind's: " + ", ".join(f"{k.name} {k.plays or 'any'}" for k in KINDS.all()) + ")")
    c.add_argument("--sets", metavar="SETS.tsv",
                   help="each sentence's set (unpredictable, predictable, shuffled: what `listen sentences` writes "
                        "beside its sentences): a transcription test compares them, the context effect")
    c.add_argument("--qualify", action="store_true",
                   help="P.808's hearing check first: three triplets of digits in noise, typed; a listener who "
                        "misses the easiest is left out")
    c.add_argument("--headphones", action="store_true",
                   help="a headphone check first (Woods et al. 2017): six trials of three tones, pick the quietest; "
                        "over loudspeakers the antiphase one sounds quietest, and fewer than five right is left out")
    c.add_argument("--gold", help="your own gold clips: a CSV with columns audio,expected (paths relative to it)")
    c.add_argument("--seed", type=int, default=1337, help="the seed of everything the test draws")
    c.add_argument("--level", type=float, default=-26.0, metavar="DBOV",
                   help="every clip's active speech level, ITU-T P.56 (default -26 dBov), so that loudness tells no "
                        "system apart")
    c.add_argument("--no-level", action="store_true", help="keep each clip's own level")
    c.add_argument("--results-dir", default="results", help="where run names are looked up (default 'results')")
    m = sub.add_parser("sentences", help="material for a transcription test: semantically unpredictable "
                                         "sentences, a predictable set and its shuffled control")
    m.add_argument("out", metavar="SENTENCES.txt", help="the sentences, one per line, for --sentences; their sets "
                                                        "go beside it, SENTENCES.sets.tsv, for `listen create --sets`")
    m.add_argument("--sus", type=int, default=20, help="semantically unpredictable sentences to make (default 20)")
    m.add_argument("--predictable", metavar="FILE", help="your predictable sentences, one per line (the LM's own "
                                                          "samples, or yours)")
    m.add_argument("--shuffled", action="store_true", help="and the predictable sentences' words shuffled, a control")
    m.add_argument("--seed", type=int, default=1337, help="the seed of every draw (default 1337)")
    i = sub.add_parser("invite", help="print one link per listener (a name invited again gets a new link)")
    i.add_argument("db", metavar="TEST.db")
    i.add_argument("names", nargs="*", metavar="NAME", help="the listeners' names (or --count)")
    i.add_argument("--count", type=int, default=0, help="this many listeners, named listener-1, listener-2, …")
    i.add_argument("--url", default=f"http://127.0.0.1:{PORT}", help="the address listeners open (as serve --url)")
    s = sub.add_parser("serve", help="serve the test to its listeners")
    s.add_argument("db", metavar="TEST.db")
    s.add_argument("--host", default="127.0.0.1", help="the address to bind (default 127.0.0.1: this machine only)")
    s.add_argument("--port", type=int, default=PORT, help=f"default {PORT}")
    s.add_argument("--url", default="", help="the address listeners open, when it is not http://HOST:PORT (a "
                                             "proxy, a name); POSTs must come from it")
    r = sub.add_parser("results", help="the analysis: print it, and write its files")
    r.add_argument("db", metavar="TEST.db")
    r.add_argument("--out", help="the folder for results.json, the CSVs, calibration.json and results.html "
                                 "(default: TEST-results beside the file)")
    r.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (default 1000)")
    a = sub.add_parser("admin", help="a new admin token (the old one stops working)")
    a.add_argument("db", metavar="TEST.db")
    a.add_argument("--url", default=f"http://127.0.0.1:{PORT}", help="the address the admin opens")
    return p


def addresses(host: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """What binding `host` binds, parsed as the system parses it ('', '0', '::0' and 0:0:0:0:0:0:0:0 are all every
    interface; a name is resolved)."""
    import socket

    try:
        found = socket.getaddrinfo(host or None, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as e:
        raise ConfigError(f"--host {host!r}: not an address this machine can bind ({e}); give 127.0.0.1, or an "
                          "address of one of its interfaces") from None
    return [ipaddress.ip_address(info[4][0].split("%")[0]) for info in found]


def loopback(host: str) -> bool:
    return all(a.is_loopback for a in addresses(host))


def wildcard(host: str) -> bool:
    return any(a.is_unspecified for a in addresses(host))


def create(args) -> int:
    from pipeline.listen import create as making

    options = making.Options(name=args.name or Path(args.db).stem, kind=args.kind,
                             votes_per_clip=args.votes_per_clip, trials_per_session=args.trials,
                             sentences=args.sentences, condition=args.condition, seed=args.seed,
                             gold=args.gold or "", level_dbov=None if args.no_level else args.level,
                             plays=args.plays, sets=args.sets or "", qualify=args.qualify,
                             headphones=args.headphones)
    admin = making.create(args.db, args.runs, options, args.results_dir)
    summary = making.summary(args.db)
    print(f"made {args.db}: {summary}")
    print(f"admin token (shown once; `listen admin {args.db}` makes a new one): {admin}")
    print(f"next: {program()} listen invite {args.db} NAME [NAME ...], then {program()} listen serve {args.db}")
    return 0


def invite(args) -> int:
    from pipeline.listen import database

    names = list(args.names) + [f"listener-{n}" for n in range(1, args.count + 1)]
    if not names:
        raise ConfigError("listen invite: name the listeners, or give --count N")
    base = args.url.rstrip("/")
    conn = database.connect(args.db)
    try:
        for name in names:
            conn.execute("BEGIN IMMEDIATE")
            secret = database.invite(conn, name)
            conn.execute("COMMIT")
            print(f"{name}\t{base}/l/{secret}")
    finally:
        conn.close()
    print(f"each link is that listener's alone (a name invited again gets a new link); serve with "
          f"{program()} listen serve {args.db}", file=sys.stderr)
    return 0


def serve(args) -> int:
    import socket

    import uvicorn

    from pipeline.listen import app, database

    host = args.host.strip("[]")
    if not loopback(host):
        conn = database.connect(args.db)
        invited = conn.execute("SELECT count(*) FROM listeners").fetchone()[0]
        conn.close()
        if not invited:
            raise ConfigError(f"--host {args.host}: serving beyond this machine needs invitations, and the test has "
                              f"none; make them with `{program()} listen invite {args.db} NAME ...`")
        if not args.url and wildcard(host):
            raise ConfigError(f"--host {args.host}: give --url, the address listeners open (e.g. "
                              f"http://{socket.gethostname()}:{args.port}), which their POSTs must come from")
    url = args.url.rstrip("/") or f"http://{f'[{host}]' if ':' in host else host}:{args.port}"
    family = socket.AF_INET6 if addresses(host)[0].version == 6 else socket.AF_INET
    if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
        raise ConfigError(f"--url {args.url}: expected http://HOST:PORT or https://HOST")
    served = app.make(args.db, origin=url)
    try:
        sock = listening_socket(host, args.port, family)
    except OSError as e:
        raise ConfigError(f"--host {args.host} --port {args.port}: cannot listen there ({e.strerror}); pick another "
                          "--port, or stop what holds it") from None
    print(f"serving {args.db} on {url} (bound to {host}:{args.port}); progress: {url}/admin?token=ADMIN_TOKEN; "
          "Ctrl-C stops it, and every vote it acknowledged is kept", flush=True)
    server = uvicorn.Server(uvicorn.Config(served, log_level="warning", access_log=False))
    server.run(sockets=[sock])
    return 0


def listening_socket(host: str, port: int, family: int):
    """Bound here, so that a port in use is an input error; made with IPPROTO_TCP named, because asyncio sets
    TCP_NODELAY only on sockets that say so, and without it each answer after a connection's first waits 40 ms
    for the listener's delayed ACK."""
    import socket

    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def results(args) -> int:
    from pipeline.core import store
    from pipeline.listen import analysis, results as told, database
    from pipeline.render.sections import listeners

    conn = database.connect(args.db)
    try:
        found = analysis.analyse(conn, n_boot=args.bootstrap)
    finally:
        conn.close()
    out = Path(args.out) if args.out else Path(args.db).with_name(f"{Path(args.db).stem}-results")
    try:
        store.write_text(out / "results.html", listeners.page(found))
        written = told.write(found, out)
    except OSError as e:
        raise ConfigError(f"--out {out}: cannot be written ({e.strerror}); free some space, or pick another "
                          "folder") from None
    print(told.text(found))
    calibrated = (f"; `--set assess.calibration={out / 'calibration.json'}` puts each measure on this panel's scale "
                  "in a run") if found.calibrations else ""
    print(f"files in {out}: {', '.join(written)}{calibrated}")
    return 0


def admin(args) -> int:
    from pipeline.listen import database

    conn = database.connect(args.db)
    try:
        conn.execute("BEGIN IMMEDIATE")
        secret = database.new_admin_token(conn)
        conn.execute("COMMIT")
    finally:
        conn.close()
    print(f"admin token: {secret}\nprogress: {args.url.rstrip('/')}/admin?token={secret}")
    return 0


def sentences(args) -> int:
    from pipeline.core import store
    from pipeline.listen import sus

    made = [("unpredictable", text) for text in sus.unpredictable(args.sus, args.seed)]
    if args.predictable:
        try:
            own = [line.strip() for line in Path(args.predictable).read_text(encoding="utf-8").splitlines()
                   if line.strip()]
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"--predictable {args.predictable}: cannot be read ({e}); give a text file of "
                              "sentences, one per line") from None
        made += [("predictable", text) for text in own]
        if args.shuffled:
            made += [("shuffled", text) for text in sus.shuffled(own, args.seed)]
    elif args.shuffled:
        raise ConfigError("--shuffled shuffles the --predictable sentences: give them")
    out = Path(args.out)
    sets = out.with_name(f"{out.stem}.sets.tsv")
    store.write_text(out, "".join(f"{text}\n" for _, text in made))
    store.write_text(sets, "set\ttext\n" + "".join(f"{name}\t{text}\n" for name, text in made))
    counts = ", ".join(f"{sum(n == name for n, _ in made)} {name}" for name in dict.fromkeys(n for n, _ in made))
    print(f"wrote {out} ({counts}) and {sets}")
    print(f"next: a run of each version with --sentences {out}, then {program()} listen create TEST.db RUN RUN "
          f"--kind transcribe --sets {sets}")
    return 0


ACTIONS = {"create": create, "sentences": sentences, "invite": invite, "serve": serve, "results": results,
           "admin": admin}


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        return ACTIONS[args.action](args)
    except ConfigError as e:
        print(f"input error: {e}", file=sys.stderr)
        return REFUSED


COMMANDS.register(Command("listen", "create|sentences|invite|serve|results|admin …",
                          "listening tests (MOS, SMOS, CMOS, A/B, typed transcription) from your own listeners, in "
                          "the browser", main))
