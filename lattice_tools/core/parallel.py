"""Running corpus-level work on many processes or machines, with the same bytes as a serial run.

The engine is any :class:`concurrent.futures.Executor` — a :class:`~concurrent.futures.ProcessPoolExecutor`,
or a ``dask.distributed.Client`` (a local cluster of worker processes, or a scheduler that dask-jobqueue's
``SLURMCluster``/``SGECluster``/``PBSCluster`` started on a cluster).  ``None`` runs serially in this process.

How work is cut: the lattices are read here, one at a time, and gathered into *shards* of whole
utterances; a shard closes at :data:`SHARD_ARCS` arcs or :data:`SHARD_UTTERANCES` utterances, whichever
comes first.  At the searches' speeds on this project's 2-core machine (0.3-3 µs per arc) a shard is
0.05-0.5 s of work while its round trip through a local Dask cluster costs ~3-5 ms, so scheduling stays
around 1 % of the work, and a shard's pickled lattices stay under ~8 MB (~40 bytes per arc; 75 for a Kaldi
lattice, whose stored order of states travels with it: the sausage follows it).  What a job does not read stays
behind (``drop_attrs``: a Kaldi lattice's transition-id strings, which would more than double it), and a job
sends back what its output needs (the alt-CTM jobs: the text, not :class:`Alternatives` objects, which cost
the driver more to unpickle than a sausage costs a worker).

How results stay identical: shards are submitted in input order, at most ``window`` at once, and their
results are consumed in that order however the workers finish, so an output written from them is the
serial output byte for byte.

Failures: a shard whose computation raises a :class:`~lattice_tools.core.errors.LatticeToolsError` (bad input,
budget) fails the job at once with that error (it would fail again).  Any other failure (a worker that
died, a lost connection) is retried once; a shard that fails twice fails the job with the first and last
utterance keys of the shard in the message.

Resuming: with a ``state_dir``, every finished shard is kept there (written atomically, named by its index
and the fingerprint of its input lattices and parameters); a run killed halfway and started again with
the same inputs and parameters recomputes only the shards that are missing.

Measuring: when the environment variable ``LATTICE_TOOLS_SHARD_CPU`` names a file, every task's CPU seconds
(its thread's CPU time inside the job's function, measured where it runs: the worker, or this process in a
serial run) are summed here, and at exit this process appends one JSON line to that file:
``{"task_cpu": seconds, "tasks": count, "process_cpu": this process's CPU seconds}``.
``bench/bench_parallel.py`` computes the scheduling overhead from it; the results are the same either way.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import LatticeToolsError, MissingDependencyError

__all__ = ["SHARD_ARCS", "SHARD_UTTERANCES", "Shard", "ShardStore", "open_executor", "run_shards", "shard_dir_for",
           "shard_items", "shard_lattices", "with_companions", "LocalClusterOnDemand"]

#: A shard closes when its lattices reach this many arcs ...
SHARD_ARCS = 100_000
#: ... or this many utterances.
SHARD_UTTERANCES = 256


@dataclass(frozen=True)
class Shard:
    """Consecutive utterances sent to one worker as one task."""

    index: int
    items: tuple                     # what the task function receives (lattices)
    keys: tuple[str, ...]            # their utterance keys, for messages
    fingerprint: str                 # hex digest of the items (with the job's parameters); "" when not resumable


def lattice_digest(lat, h=None):
    """Feed a lattice's key, words and every array into the hash ``h`` (a new sha256 when None)."""
    h = hashlib.sha256() if h is None else h
    h.update(lat.key.encode("utf-8", "surrogatepass") + b"\0")
    h.update(str(lat.frame_shift).encode() + b"\0")
    for name in ("src", "dst", "word", "ilabel", "t0", "t1", "graph_cost", "acoustic_cost", "final_graph_cost",
                 "final_acoustic_cost"):
        h.update(memoryview(getattr(lat, name)).cast("B"))
    symbols = lat.symbols
    h.update("".join(f"{word_id}={symbols.word(word_id) if word_id else ''}\0"
                     for word_id in np.unique(lat.word).tolist()).encode("utf-8", "surrogatepass"))
    return h


def shard_lattices(lattices: Iterable, parameters: str = "", *, fingerprint: bool = False,
                   max_arcs: int | None = None, max_utterances: int | None = None,
                   drop_attrs: Sequence[str] = ()) -> Iterator[Shard]:
    """Cut a stream of lattices into shards of consecutive utterances (see the module docstring); the
    limits default to :data:`SHARD_ARCS` and :data:`SHARD_UTTERANCES`.

    ``fingerprint``: give every shard the sha256 of its lattices and ``parameters`` (a text naming everything
    else the result depends on: the job, its options), which a :class:`ShardStore` names its files by; pass
    ``fingerprint=store is not None``.  Without it the fingerprint is empty (such shards cannot be stored): the
    hash reads every array of every lattice, ~5 % of an oracle's CPU on 100-best lists, for nobody when
    nothing is resumed.  ``drop_attrs``: the shards hold the lattices without these ``attrs``
    (:meth:`~lattice_tools.core.lattice.Lattice.without_attrs`), which the job does not read: a Kaldi
    lattice's transition-id strings are more than half of what a worker would otherwise be sent."""
    max_arcs = SHARD_ARCS if max_arcs is None else max_arcs
    max_utterances = SHARD_UTTERANCES if max_utterances is None else max_utterances
    batch: list = []
    arcs = 0
    index = 0

    def close():
        if not fingerprint:
            return Shard(index, tuple(batch), tuple(lat.key for lat in batch), "")
        h = hashlib.sha256(parameters.encode("utf-8", "surrogatepass") + b"\0")
        for lat in batch:
            lattice_digest(lat, h)
        return Shard(index, tuple(batch), tuple(lat.key for lat in batch), h.hexdigest())

    for lat in lattices:
        batch.append(lat.without_attrs(drop_attrs) if drop_attrs else lat)
        arcs += lat.num_arcs
        if arcs >= max_arcs or len(batch) >= max_utterances:
            yield close()
            index += 1
            batch, arcs = [], 0
    if batch:
        yield close()


def shard_items(items: Sequence, keys: Sequence[str], max_items: int) -> Iterator[Shard]:
    """Consecutive runs of at most ``max_items`` of ``items`` (already in memory, e.g. the segments a scorer
    aligns) as shards named by ``keys``; their fingerprint is empty: such work is not resumed."""
    for index, start in enumerate(range(0, len(items), max_items)):
        yield Shard(index, tuple(items[start:start + max_items]), tuple(keys[start:start + max_items]), "")


def with_companions(shards: Iterable[Shard], companion: Callable[[str], Any]) -> Iterator[Shard]:
    """Each shard with its items paired with a text of their utterance (``(item, companion(key))``, e.g. the
    reference an oracle aligns with), the texts part of its fingerprint (a shard without one keeps none)."""
    for shard in shards:
        texts = tuple(companion(key) for key in shard.keys)
        if not shard.fingerprint:
            yield Shard(shard.index, tuple(zip(shard.items, texts, strict=True)), shard.keys, "")
            continue
        h = hashlib.sha256(shard.fingerprint.encode() + b"\0")
        for text in texts:
            h.update((text if isinstance(text, str) else repr(text)).encode("utf-8", "surrogatepass") + b"\0")
        yield Shard(shard.index, tuple(zip(shard.items, texts, strict=True)), shard.keys, h.hexdigest())


class ShardStore:
    """Finished shards' results under ``directory`` (created when needed), for resuming a killed run.

    One file per shard, ``shard-<index>-<fingerprint>.pkl``, written to a temporary name and renamed, so a
    file that exists is whole.  The directory holds only what this project wrote there itself."""

    def __init__(self, directory: str):
        self.directory = directory

    def _path(self, shard: Shard) -> str:
        if not shard.fingerprint:
            # named by its index alone, a stored shard would be taken for another input's: a wrong result on resume
            raise ValueError(f"shard {shard.index} has no fingerprint: cut it with shard_lattices(..., "
                             "fingerprint=True) to store it")
        return os.path.join(self.directory, f"shard-{shard.index:07d}-{shard.fingerprint[:32]}.pkl")

    def get(self, shard: Shard):
        """``(True, result)`` for a finished shard, else ``(False, None)``."""
        path = self._path(shard)
        try:
            with open(path, "rb") as f:
                return True, pickle.load(f)
        except FileNotFoundError:
            return False, None
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError):
            return False, None  # unreadable: computed again

    def put(self, shard: Shard, result) -> None:
        from .files import atomic_write

        path = self._path(shard)
        os.makedirs(self.directory, exist_ok=True)
        with atomic_write(path, "wb") as f:
            pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)

    def remove(self) -> None:
        """Delete the stored shards and the directory (after the job's output is complete)."""
        with contextlib.suppress(FileNotFoundError):
            for name in os.listdir(self.directory):
                if name.startswith("shard-"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(os.path.join(self.directory, name))
            with contextlib.suppress(OSError):
                os.rmdir(self.directory)


#: see *Measuring* in the module docstring
SHARD_CPU_ENV = "LATTICE_TOOLS_SHARD_CPU"
_task_cpu = {"task_cpu": 0.0, "tasks": 0}
_task_cpu_report_registered = False


def _timed_call(fn, *args):
    """``(fn(*args), CPU seconds of this thread during the call)``: run where the task runs."""
    t0 = time.thread_time()
    result = fn(*args)
    return result, time.thread_time() - t0


def _report_task_cpu(path: str) -> None:
    import json

    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({**_task_cpu, "process_cpu": time.process_time()}) + "\n")


def _measuring():
    """``True`` when this process reports its tasks' CPU seconds (and registers that report once)."""
    global _task_cpu_report_registered
    path = os.environ.get(SHARD_CPU_ENV)
    if not path:
        return False
    if not _task_cpu_report_registered:
        import atexit

        atexit.register(_report_task_cpu, path)
        _task_cpu_report_registered = True
    return True


def _untimed(pair):
    result, seconds = pair
    _task_cpu["task_cpu"] += seconds
    _task_cpu["tasks"] += 1
    return result


def _submit(executor, fn, *args):
    if hasattr(executor, "scheduler_info") and hasattr(executor, "gather"):  # a dask.distributed Client
        return executor.submit(fn, *args, pure=False)
    return executor.submit(fn, *args)


def _describe(shard: Shard) -> str:
    keys = shard.keys
    return f"{keys[0]!r}" if len(keys) == 1 else f"{len(keys)} utterances {keys[0]!r} .. {keys[-1]!r}"


def run_shards(fn: Callable, shards: Iterable[Shard], *, executor=None, args: Sequence = (),
               window: int | None = None, store: ShardStore | None = None,
               progress: Callable[[Shard], None] | None = None) -> Iterator[tuple[Shard, Any]]:
    """``(shard, fn(*args, shard.items))`` for every shard, in shard order.

    ``executor``: None runs each shard here when its result is wanted; otherwise at most ``window``
    shards (default: twice the executor's workers, at least 4) are submitted ahead.  ``fn`` must be a
    module-level function (it is pickled to the workers).  ``store``: finished results are kept there and
    a shard found there is not computed again.  ``progress`` is called once per finished shard."""
    if _measuring():
        yield from ((shard, _untimed(pair)) for shard, pair in
                    _run_shards(_timed_call, shards, executor=executor, args=(fn, *args), window=window,
                                store=_TimedStore(store) if store else None, progress=progress))
        return
    yield from _run_shards(fn, shards, executor=executor, args=args, window=window, store=store, progress=progress)


class _TimedStore:
    """A :class:`ShardStore` seen through :func:`_timed_call`'s pairs: a stored shard counts 0 CPU seconds."""

    def __init__(self, store: ShardStore):
        self.store = store

    def get(self, shard):
        found, result = self.store.get(shard)
        return found, ((result, 0.0) if found else None)

    def put(self, shard, pair):
        self.store.put(shard, pair[0])


def _run_shards(fn, shards, *, executor, args, window, store, progress):
    if executor is None:
        for shard in shards:
            found, result = store.get(shard) if store else (False, None)
            if not found:
                result = fn(*args, shard.items)
                if store:
                    store.put(shard, result)
            if progress:
                progress(shard)
            yield shard, result
        return
    window = window or max(4, 2 * _worker_count(executor))
    pending: deque = deque()   # (shard, future or None, stored result)
    source = iter(shards)

    def refill():
        while len(pending) < window:
            shard = next(source, None)
            if shard is None:
                return
            found, result = store.get(shard) if store else (False, None)
            pending.append((shard, None, result) if found else (shard, _submit(executor, fn, *args, shard.items), None))

    refill()
    while pending:
        shard, future, result = pending.popleft()
        if future is not None:
            result = _result_with_retry(executor, fn, args, shard, future)
            if store:
                store.put(shard, result)
        refill()
        if progress:
            progress(shard)
        yield shard, result


def _result_with_retry(executor, fn, args, shard: Shard, future):
    try:
        return future.result()
    except LatticeToolsError:
        raise
    except KeyboardInterrupt:
        raise
    except Exception as first:  # a worker that died, a lost connection: once more
        try:
            return _submit(executor, fn, *args, shard.items).result()
        except LatticeToolsError:
            raise
        except Exception as second:
            raise LatticeToolsError(f"the shard of {_describe(shard)} failed twice: "
                                    f"{type(first).__name__}: {first}; then {type(second).__name__}: {second}",
                                    key=shard.keys[0]) from None


def _worker_count(executor) -> int:
    if hasattr(executor, "scheduler_info"):
        try:
            return max(1, len(executor.scheduler_info().get("workers", {})))
        except Exception:
            return 2
    return max(1, int(getattr(executor, "_max_workers", 0) or os.cpu_count() or 2))


def shard_dir_for(out: str, executor) -> str | None:
    """Where a parallel run keeps its finished shards for resuming: beside its output ``out`` (``OUT.shards``);
    None for a serial run or an output on stdout."""
    if executor is None or out in ("-", ""):
        return None
    return f"{out}.shards"


@contextlib.contextmanager
def open_executor(jobs: int | None = None, scheduler: str | None = None, *, memory_limit: int | str = 0):
    """The executor the command line's ``--jobs N`` / ``--scheduler ADDRESS`` ask for (None: serial).

    ``jobs``: a Dask ``LocalCluster`` of that many single-threaded worker processes on this machine,
    closed on exit.  ``scheduler``: a client of a running Dask scheduler (``tcp://host:8786``, e.g. one a
    dask-jobqueue ``SLURMCluster`` started), left running on exit.  ``memory_limit``: Dask's own per-worker
    limit (0 = none: the commands' ``--max-memory`` budget applies in every worker instead)."""
    if jobs is not None and scheduler is not None:
        raise LatticeToolsError("give --jobs or --scheduler, not both")
    if jobs is None and scheduler is None:
        yield None
        return
    if jobs is not None and jobs < 1:
        raise LatticeToolsError(f"--jobs must be at least 1 (got {jobs})")
    try:
        from distributed import Client
    except ImportError as exc:
        raise MissingDependencyError(f"running on several processes needs Dask (pip install "
                                     f"'lattice-tools[dask]'): {exc}") from None
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout="20s")
        except (OSError, TimeoutError) as exc:
            raise LatticeToolsError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
        try:
            yield client
        finally:
            client.close()
        return
    assert jobs is not None   # given, since scheduler is None
    on_demand = LocalClusterOnDemand(jobs, memory_limit)
    try:
        yield on_demand
    finally:
        on_demand.close()


class LocalClusterOnDemand:
    """A Dask ``LocalCluster`` of ``jobs`` single-threaded worker processes, started by the first task.

    Starting one costs ~3-5 s; a command given ``--jobs`` whose input turns out to need no workers (an
    alt-CTM for ``oracle``, a single shard) should not pay it.  It is a client as far as :func:`run_shards`
    is concerned: ``submit``, ``gather`` and ``scheduler_info`` start the cluster and go to its client."""

    def __init__(self, jobs: int, memory_limit: int | str = 0):
        self.jobs, self.memory_limit = jobs, memory_limit
        self._cluster: Any = None
        self._client: Any = None

    @property
    def started(self) -> bool:
        return self._client is not None

    def client(self):
        if self._client is None:
            import logging

            from distributed import Client, LocalCluster

            self._cluster = LocalCluster(n_workers=self.jobs, threads_per_worker=1, processes=True,
                                         memory_limit=self.memory_limit, dashboard_address=None,
                                         silence_logs=logging.ERROR)
            self._client = Client(self._cluster)
        return self._client

    def submit(self, fn, *args, **kwargs):
        return self.client().submit(fn, *args, **kwargs)

    def gather(self, *args, **kwargs):
        return self.client().gather(*args, **kwargs)

    def scheduler_info(self, *args, **kwargs):
        return self.client().scheduler_info(*args, **kwargs)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._cluster.close()
            self._client = self._cluster = None

