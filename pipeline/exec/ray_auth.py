"""Is a Ray cluster closed to strangers? Checked before a run sends it any work.

A Ray cluster without token authentication runs whatever anyone who reaches its ports sends it (the hole behind
the "ShadowRay" attacks). Ray 2.60 turns tokens on by default only for the local instance that `ray.init()`
starts; clusters made with `ray start` are open unless every node has RAY_AUTH_MODE=token. So before joining a
cluster the driver knocks twice, each time from a fresh process, since Ray reads its auth settings once:
- without any token: if the cluster answers, it is open, and the run stops unless executor.allow_insecure;
- with the driver's own token: if the cluster refuses it, the run stops with the fix, not a Ray traceback.

`python -m pipeline.exec.ray_auth ADDRESS` is one knock: it prints {"ok": …, "auth_error": …, "error": …}."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from pipeline.errors import ConfigError
from pipeline.exec.executor import ExecutorConfig

PROBE_TIMEOUT_S = 20  # a GCS that is not there is retried for a minute by Ray's own client
TOKEN_VARS = ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")
RISK = ("anyone who can reach its ports can run any code on every node (Ray's GCS, Ray Client and job APIs "
        "take no password)")
FIX = ("start every node with token authentication: see the README, 'Running on a Ray cluster' (make a token once "
       "with `ray get-auth-token --generate`, copy ~/.ray/auth_token to each node, and `export RAY_AUTH_MODE=token` "
       "before `ray start` and before run_pipeline.py)")


def knock(address: str, env: dict) -> dict:
    """One connection attempt to the cluster's GCS, in a fresh process with `env`."""
    try:
        proc = subprocess.run([sys.executable, "-m", "pipeline.exec.ray_auth", address], capture_output=True, text=True,
                              env=env, timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"ok": False, "auth_error": False, "error": f"no answer within {PROBE_TIMEOUT_S} s"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode or not lines:
        return {"ok": False, "auth_error": False, "error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(lines[-1])


def without_token(env: dict, home: str) -> dict:
    """The environment of a stranger: no token anywhere Ray looks for one."""
    stranger = {k: v for k, v in env.items() if k not in TOKEN_VARS}
    return {**stranger, "RAY_AUTH_MODE": "disabled", "HOME": home}


def has_token(env) -> bool:
    """Whether Ray will find a token in `env`, where it looks: the variable, the file it names, ~/.ray."""
    path = env.get("RAY_AUTH_TOKEN_PATH") or os.path.join(env.get("HOME", "~"), ".ray", "auth_token")
    return bool(env.get("RAY_AUTH_TOKEN")) or os.path.isfile(os.path.expanduser(path))


def check(ex: ExecutorConfig) -> dict:
    """The executor's security state, for the manifest; ConfigError when the cluster must not be used."""
    state = {"kind": "ray", "address": ex.address or "local instance", "allow_insecure": ex.allow_insecure}
    if not ex.address:  # ray.init() starts it for this run alone; Ray 2.60 turns tokens on unless told otherwise
        return {**state, "auth_mode": os.environ.get("RAY_AUTH_MODE", "token").lower(),
                "auth_checked_by": "Ray's default for a local instance"}
    with tempfile.TemporaryDirectory() as home:
        stranger = knock(ex.address, without_token(dict(os.environ), home))
    if stranger["ok"]:
        if not ex.allow_insecure:
            raise ConfigError(f"executor.address = {ex.address!r}: this Ray cluster has no token authentication, "
                              f"so {RISK}. Fix: {FIX}. To use it anyway on a network you trust, set "
                              "--set executor.allow_insecure=true (the manifest records it).")
        return {**state, "auth_mode": "disabled", "auth_checked_by": "a connection without a token was accepted"}
    if not stranger["auth_error"]:
        raise ConfigError(f"executor.address = {ex.address!r}: cannot reach a Ray cluster there "
                          f"({stranger['error']}); check the address and that `ray start` ran on the head")
    if os.environ.get("RAY_AUTH_MODE", "").lower() != "token":
        raise ConfigError(f"executor.address = {ex.address!r}: the cluster requires token authentication, and "
                          "this shell has no RAY_AUTH_MODE=token. Fix: export RAY_AUTH_MODE=token, with the "
                          "cluster's token in ~/.ray/auth_token (or a file named by RAY_AUTH_TOKEN_PATH)")
    if not has_token(os.environ):
        raise ConfigError(f"executor.address = {ex.address!r}: the cluster requires token authentication, and no "
                          "token was found (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH, ~/.ray/auth_token). Fix: copy the "
                          "head's ~/.ray/auth_token to this machine (or point RAY_AUTH_TOKEN_PATH at it)")
    mine = knock(ex.address, dict(os.environ))
    if not mine["ok"]:
        why = "refused this driver's token" if mine["auth_error"] else f"did not answer ({mine['error']})"
        raise ConfigError(f"executor.address = {ex.address!r}: the cluster {why}. Fix: copy the head's "
                          "~/.ray/auth_token to this machine (or point RAY_AUTH_TOKEN_PATH at it)")
    return {**state, "auth_mode": "token",
            "auth_checked_by": "refused without a token, accepted with the driver's token"}


def _knock_here(address: str) -> dict:
    from ray._private.services import canonicalize_bootstrap_address
    from ray._raylet import GcsClient
    from ray.exceptions import AuthenticationError

    try:
        GcsClient(address=canonicalize_bootstrap_address(address)).get_all_node_info(timeout=10)
    except AuthenticationError as e:
        return {"ok": False, "auth_error": True, "error": str(e).splitlines()[0][:300]}
    except Exception as e:  # unreachable, a bad address: reported as such by check()
        return {"ok": False, "auth_error": False, "error": f"{type(e).__name__}: {str(e)[:300]}"}
    return {"ok": True, "auth_error": False, "error": ""}


if __name__ == "__main__":
    print(json.dumps(_knock_here(sys.argv[1])))
