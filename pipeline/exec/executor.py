"""Where per-item work runs: in this process (`local`) or on a Ray cluster (`ray`).

Both take a worker class (a pipeline.exec.workers.Worker), its constructor arguments, and a list of (key, batch)
jobs, and yield (key, results) as results arrive. Only the worker runs remotely; the stage that called writes every
file itself, through the same per-item cache, so a Ray run resumes a local one and the other way round.

Design: audio travels as arrays through Ray's object store (synthesized audio back to the driver, 16 kHz
arrays out to the recognizers), so nodes share no filesystem: each node needs only the same code, venv and
model packages."""
from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
from collections import Counter
from dataclasses import dataclass
from importlib.util import find_spec
from typing import Any, Iterable, Iterator

from pipeline.core.options import option
from pipeline.errors import ConfigError
from pipeline.exec.workers import Done, Worker

log = logging.getLogger(__name__)
RAY_INSTALL = "pip install -e '.[ray]' (or scripts/setup --test)"


def _ray_installed(kind: str) -> None:
    if kind == "ray" and find_spec("ray") is None:
        raise ConfigError(f"executor.kind = 'ray' needs Ray, an optional extra: {RAY_INSTALL}")


@dataclass(frozen=True)
class ExecutorConfig:
    """Where synthesis and transcription run. Never part of a cache key: a Ray run and a local one make the same
    files (tests/test_ray.py)."""
    kind: str = option("local", "where synthesis and transcription run", flag="--executor",
                       choices=("local", "ray"), check=_ray_installed, speed_only=True)
    address: str = option("", "Ray: '' starts a local instance, 'auto' joins a running cluster, or host:port",
                          flag="--ray-address", speed_only=True)
    actors: int = option(0, "Ray actors per stage and backend; 0: cluster CPUs / cpus_per_actor", at_least=0,
                         speed_only=True)
    cpus_per_actor: float = option(1.0, "CPUs each Ray actor asks for", at_least=1e-3, speed_only=True)
    num_cpus: int = option(0, "CPUs of a local Ray instance started here; 0: all", at_least=0, speed_only=True)
    asr_gpus: float = option(0.0, "GPUs each Ray ASR actor asks for; 0: one when device is cuda, none on CPUs (TTS "
                             "actors never ask for one)", at_least=0, speed_only=True)
    allow_insecure: bool = option(False, "join a cluster without token authentication (see pipeline/exec/ray_auth.py)",
                                  speed_only=True)


class LocalExecutor:
    def __init__(self, cfg: ExecutorConfig):
        self.cfg = cfg

    def map(self, worker_cls: type[Worker], args: tuple, jobs: Iterable[tuple[Any, list]],
            count: int, gpus: float = 0) -> Iterator[tuple[Any, list[Done]]]:
        """Run `worker_cls(*args).work(batch)` for each (key, batch) of at most `count` jobs; the worker loads once,
        when the first job comes (a stage whose items all turn out unusable loads no model). `jobs` may be a
        generator: it is drawn from only as workers are free, so inputs stream."""
        worker = None
        for key, batch in jobs:
            worker = worker or worker_cls(*args)
            yield key, worker.work(batch)

    def close(self) -> None:
        pass


class RayExecutor:
    """An actor pool per stage and backend: each actor loads its model once; Ray restarts a dead actor and
    retries its calls, so a killed worker process costs only time."""

    def __init__(self, cfg: ExecutorConfig):
        try:
            import ray
        except ImportError:
            raise ConfigError(f"executor.kind = 'ray' needs Ray: {RAY_INSTALL}") from None
        self.ray, self.cfg = ray, cfg
        self.nodes: Counter = Counter()

    def _connect(self) -> None:
        """Start or join Ray only when there is work: a fully cached stage costs no Ray start-up."""
        if not self.ray.is_initialized():
            address = self.cfg.address or None
            if address is None:
                # Ray starts its workers at niceness 15: on a machine with anything else to do they wait for it, and
                # on two busy cores 18 tiny.en transcripts took over ten minutes. A run's workers are its own work.
                os.environ.setdefault("RAY_worker_niceness", "0")
            handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
            self.ray.init(address=address, num_cpus=None if address else (self.cfg.num_cpus or None),
                          include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
            for sig, handler in handlers.items():  # Ray's own SIGTERM handler would end the driver on the spot:
                if handler is not None:          # ours unwinds, so the actors are shut down and the run says so
                    signal.signal(sig, handler)

    def actors(self, gpus: float = 0) -> int:
        if self.cfg.actors:
            return self.cfg.actors
        resources = self.ray.cluster_resources()
        n = max(1, int(resources.get("CPU", 1) // self.cfg.cpus_per_actor))
        return min(n, max(1, int(resources.get("GPU", 0) // gpus))) if gpus else n

    def map(self, worker_cls: type[Worker], args: tuple, jobs: Iterable[tuple[Any, list]],
            count: int, gpus: float = 0) -> Iterator[tuple[Any, list[Done]]]:
        todo = iter(jobs)
        first = next(todo, None)
        if first is None:  # no job after all (every input unusable): no Ray start, no model loaded
            return
        self._connect()
        ray = self.ray
        remote = ray.remote(worker_cls).options(num_cpus=self.cfg.cpus_per_actor, num_gpus=gpus, max_restarts=-1,
                                                max_task_retries=-1)
        n = min(self.actors(gpus), count)
        actors = [remote.remote(*args) for _ in range(n)]
        todo = itertools.chain([first], todo)
        idle, in_flight = list(actors), {}
        try:
            while True:
                for actor in list(idle):  # keep every actor busy with one job
                    job = next(todo, None)
                    if job is None:
                        break
                    idle.remove(actor)
                    in_flight[actor.work.remote(job[1])] = (job[0], actor)
                if not in_flight:
                    break
                (ref,), _ = ray.wait(list(in_flight), num_returns=1)
                key, actor = in_flight.pop(ref)
                idle.append(actor)
                results = ray.get(ref)
                self.nodes.update(r.node for r in results)
                yield key, results
        finally:
            for actor in actors:
                ray.kill(actor)
        log.info("ray: %d actors; items per node so far: %s", n, dict(self.nodes))

    def close(self) -> None:
        if self.ray.is_initialized():
            self.ray.shutdown()


@contextlib.contextmanager
def make(cfg: ExecutorConfig):
    """The executor for one stage, shut down when the stage is done (or fails)."""
    pool = RayExecutor(cfg) if cfg.kind == "ray" else LocalExecutor(cfg)
    try:
        yield pool
    finally:
        pool.close()
