"""Spread per-trajectory tasks over worker processes or a Ray cluster, results as they finish.

A runner hands :func:`fan_out` a module-level task function and one picklable payload per
trajectory. With the default plan (one worker, local) every task runs inline, in order, in the
caller's context — the sequential run. With ``workers > 1`` the tasks run in that many worker
processes (started with ``spawn``: no thread or lock of the parent is inherited), at most
``workers`` at a time; with ``executor="ray"`` they run as Ray tasks on the cluster that
``ray_address`` names (or a local Ray instance started on first use).

A task's own exceptions travel back and are raised in the caller (the runners catch per-user
errors inside the task, so what arrives is fatal). A worker that dies under a task (killed, out
of memory, a crash in native code) does not sink the run: that task is yielded as a
:class:`TaskCrash` and the others finish. With a process pool the dead worker breaks the whole
pool, so the tasks that were running with it are retried one at a time in a fresh pool to find
the one that kills its worker; the rest go on in a fresh pool.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

from membase.exceptions import ConfigError
from membase.runners._common import RunReport

__all__ = [
    "EXECUTORS",
    "NO_PROGRESS",
    "FanOut",
    "TaskCrash",
    "crashed_report",
    "ensure_ray",
    "fan_out",
    "import_ray",
    "ray_missing_message",
    "shared_workers",
]

EXECUTORS = ("local", "ray")
RAY_INSTALL = "pip install 'memtrace-llm[ray]'"


@dataclass(frozen=True, kw_only=True)
class FanOut:
    """Where the per-trajectory tasks of a run execute."""

    workers: int | None = None
    """Tasks running at the same time: worker processes locally (None: 1, inline), in-flight tasks
    on Ray (None: as many as the cluster has CPUs)."""
    executor: Literal["local", "ray"] = "local"
    """``local``: this machine (inline when ``workers`` is 1); ``ray``: a Ray cluster."""
    ray_address: str | None = None
    """Cluster to join (``auto``, ``ray://host:10001``); None starts a local Ray instance."""
    ray_num_cpus: int | None = None
    """CPUs of the local Ray instance that ``ray_address=None`` starts (None: all)."""

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        if self.executor not in EXECUTORS:
            raise ValueError(f"executor must be one of {EXECUTORS}, got {self.executor!r}")

    @property
    def inline(self) -> bool:
        """True when tasks run in the calling process, one after the other."""
        return self.executor == "local" and (self.workers or 1) == 1


@dataclass(frozen=True, kw_only=True)
class TaskCrash:
    """The worker that ran a task died before returning; the task's result is lost."""

    error: str
    """One line: what happened to the worker."""


def crashed_report(stage: str, user_id: str, crash: TaskCrash) -> RunReport:
    """The report of a user whose task was lost with its worker: one user failure."""
    part = RunReport(stage=stage)
    part.add_failure(user_id, user_id, RuntimeError(crash.error))
    part.users_failed[user_id] = crash.error
    return part


class _NoProgress:
    """The progress bar of a task run elsewhere: the caller advances its own bar per user."""

    def update(self, n: int = 1) -> None:
        pass


NO_PROGRESS = _NoProgress()


def fan_out(task: Callable[..., Any], payloads: Sequence[tuple[Any, ...]], plan: FanOut) -> Iterator[tuple[int, Any]]:
    """Run ``task(*payload)`` for every payload; yield ``(index, result)`` as each one finishes.

    Inline plans yield in input order; the others in completion order. A result is a
    :class:`TaskCrash` when the worker died under the task.

    Raises:
        Exception: The first exception a task raised (the tasks not yet started are dropped).
        ImportError: For ``executor="ray"`` without Ray installed (the message names the extra).
    """
    if plan.inline:
        for index, payload in enumerate(payloads):
            yield index, task(*payload)
    elif plan.executor == "ray":
        yield from _ray_fan_out(task, payloads, plan)
    else:
        yield from _process_fan_out(task, payloads, plan.workers or 1)


# -- worker processes ---------------------------------------------------------------------------


def _new_pool(workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))


class _SharedPool:
    """One pool of worker processes lent to every fan-out of a block; replaced when it breaks."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def get(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = _new_pool(self.workers)
        return self._pool

    def drop(self, *, stop: bool) -> None:
        if self._pool is not None:
            if stop:
                _stop_workers(self._pool)
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


_SHARED_POOL: ContextVar[_SharedPool | None] = ContextVar("membase_shared_worker_pool", default=None)


@contextmanager
def shared_workers(plan: FanOut) -> Iterator[None]:
    """Keep one pool of ``plan.workers`` processes for every fan-out inside the block.

    The stages of ``python -m membase run`` then start their workers (interpreter, imports) once
    instead of once per stage. Inline and Ray plans need no pool: the block does nothing for them.
    """
    if plan.inline or plan.executor != "local":
        yield
        return
    shared = _SharedPool(plan.workers or 1)
    token = _SHARED_POOL.set(shared)
    try:
        yield
    finally:
        _SHARED_POOL.reset(token)
        shared.drop(stop=False)


def _process_fan_out(task: Callable[..., Any], payloads: Sequence[tuple[Any, ...]], workers: int
                     ) -> Iterator[tuple[int, Any]]:
    queue = deque(range(len(payloads)))
    while queue:
        suspects = yield from _run_pool(task, payloads, queue, workers)
        for index in suspects:  # one at a time: the task that kills its worker is the one that fails
            alone = yield from _run_pool(task, payloads, deque([index]), 1)
            if alone:
                yield index, TaskCrash(error="the worker process running this trajectory died "
                                             "(killed, out of memory or a crash in native code)")


def _run_pool(task: Callable[..., Any], payloads: Sequence[tuple[Any, ...]], queue: deque[int], workers: int
              ) -> Iterator[tuple[int, Any]]:
    """Run queued tasks with at most ``workers`` in flight; returns the in-flight tasks of a pool
    that broke (the queue keeps the ones never started)."""
    shared = _SHARED_POOL.get()
    if shared is not None and shared.workers != workers:
        shared = None  # the one-at-a-time reruns after a crash get a pool of their own
    pool = shared.get() if shared is not None else _new_pool(workers)
    running: dict[Future[Any], int] = {}
    finished = healthy = False
    try:
        while queue or running:
            while queue and len(running) < workers:
                index = queue.popleft()
                running[pool.submit(task, *payloads[index])] = index
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            broken: list[int] = []
            for future in done:
                index = running.pop(future)
                try:
                    result = future.result()
                except BrokenProcessPool:
                    broken.append(index)
                    continue
                yield index, result
            if broken:
                finished = True
                return sorted([*broken, *running.values()])
        finished = healthy = True
        return []
    finally:
        if shared is not None:
            if not healthy:
                shared.drop(stop=not finished)
        else:
            if not finished:  # an error, Ctrl-C or a caller that stopped reading: do not wait for the tasks
                _stop_workers(pool)
            pool.shutdown(wait=True, cancel_futures=True)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    # ProcessPoolExecutor (before Python 3.14) has no public way to stop running tasks
    for process in list(getattr(pool, "_processes", {}).values()):
        if process.is_alive():
            process.terminate()


# -- Ray ----------------------------------------------------------------------------------------


def ray_missing_message() -> str:
    """The one line printed when Ray is asked for but not installed."""
    return f"--executor ray needs the Ray package: {RAY_INSTALL}"


def import_ray() -> Any:
    """The ``ray`` module, started (joined or launched locally) on first use.

    Raises:
        ImportError: When Ray is not installed.
    """
    try:
        import ray
    except ImportError as exc:
        raise ImportError(ray_missing_message()) from exc
    return ray


def ensure_ray(plan: FanOut) -> Any:
    """Join the cluster of ``plan`` (or start a local instance) unless Ray is already up.

    Raises:
        ImportError: When Ray is not installed.
        ConfigError: When Ray cannot start or finds no cluster (``--ray-address auto`` with none running).
    """
    ray = import_ray()
    if not ray.is_initialized():
        try:
            ray.init(address=plan.ray_address, num_cpus=plan.ray_num_cpus if plan.ray_address is None else None,
                     include_dashboard=False, log_to_driver=False, configure_logging=False)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            where = f"the Ray cluster at {plan.ray_address!r}" if plan.ray_address else "a local Ray instance"
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(f"--executor ray: cannot start or join {where}: {first}") from None
    return ray


def _ray_fan_out(task: Callable[..., Any], payloads: Sequence[tuple[Any, ...]], plan: FanOut
                 ) -> Iterator[tuple[int, Any]]:
    ray = ensure_ray(plan)
    remote = ray.remote(max_retries=1)(task)
    limit = plan.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    queue = deque(range(len(payloads)))
    running: dict[Any, int] = {}
    try:
        while queue or running:
            while queue and len(running) < limit:
                index = queue.popleft()
                running[remote.remote(*payloads[index])] = index
            done, _ = ray.wait(list(running), num_returns=1)
            for ref in done:
                index = running.pop(ref)
                yield index, _ray_result(ray, ref)
    finally:
        for ref in running:
            ray.cancel(ref, force=True)


def _ray_result(ray: Any, ref: Any) -> Any:
    try:
        return ray.get(ref)
    except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError,
            ray.exceptions.OutOfMemoryError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return TaskCrash(error=f"the Ray worker running this trajectory died ({type(exc).__name__}: {first})")
    except ray.exceptions.RayTaskError as exc:
        raise exc.as_instanceof_cause() from None
