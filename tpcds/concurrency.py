"""N clients running star joins at once against one driver: queries per minute, rows checked.

The fact of :mod:`tpcds.partition_scale` (``sales``, Hive-partitioned by ``day``, one small
Parquet file per partition; 1,000 partitions by default, kept in ``data/partition-scale``) as
an external catalog table, and its dimension ``days``. Each client runs the star join again
and again for a fixed window, each query with a different dimension filter
(``d.pick = 1 AND d.d_day % m = r``), so consecutive and concurrent queries keep different
partitions and no filter cache could answer them all; every result is compared with the
answer known from how the data is made (:func:`expected_rows`).

Two front ends, each with Spark's own dynamic partition pruning (``spark``) and with dpp's
(``dpp``), for 1, 4 and 16 clients:

* ``classic``: one local SparkSession (Hive catalog) shared by N Python threads — what a
  multi-user driver (a notebook server, a job server) does. dpp's optimizer hook is installed
  on it (``DppSession`` + ``OptimizerHook``, as :class:`tpcds.partition_scale.ScaleRunner`
  does). A mode is session conf, shared by every thread, so it is set once per measured
  window, never per query. Each thread sets its own Spark job group (a thread-local property
  in PySpark's pinned-thread mode) so its jobs can be told apart and cancelled.
* ``connect``: ``dpp connect-server`` (a subprocess on a free loopback port, its own state
  folder) and N Spark Connect client sessions, one per thread; ``spark`` is the same server
  with ``spark.dpp.enabled=false`` set on each client session.

Throughput is completed queries over the window's wall time (from the common start until
the last client's last query ends: no query is cut off, none started after the window). CPU
time of this process, the driver JVM (and the Connect server's Python) over each window is
read from ``/proc``, so a saturated core shows up beside the number.

``--profile-seconds S`` adds one unmeasured window per mode at the largest N, sampled: every
50 ms the Python frames of every thread of the process that runs dpp's hook
(``sys._current_frames``: classic only; the Connect server's hook runs in another process),
every 2 s a ``jstack`` of the driver JVM, classified by where each thread waits, and a Java
Flight Recording of the driver JVM: time spent waiting to enter each monitor, by caller,
and where its CPU goes (:class:`PySampler`, :class:`JvmSampler`, :class:`JfrSampler`;
Spark's status tracker too on the classic session, :class:`SchedulerSampler`).

Usage::

    python -m tpcds.concurrency --out bench-out/concurrency [--seconds 60] [--clients 1,4,16]
        [--fronts classic,connect] [--modes spark,dpp] [--partitions 1000]
        [--kind catalog|declared] [--profile-seconds 20] [--rounds 3]
"""
from __future__ import annotations

import argparse
import collections
import json
import linecache
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

from tpcds.partition_scale import DIM, FACT, MANIFEST, PART

log = logging.getLogger(__name__)

FRONTS = ("classic", "connect")
MODES = ("spark", "dpp")
KINDS = ("catalog", "declared")
MODULI = (4, 5, 7, 13)   # the dimension filters' d_day % m = r (not 3 or 11: 33 | every step)
DPP_OFF = "spark.dpp.enabled"
SERVER_CONF = {"spark.sql.shuffle.partitions": "8", "spark.sql.session.timeZone": "UTC"}

Progress = Callable[[str], None]

QUERY = (f"SELECT f.{PART}, count(*) AS n, round(sum(f.amount), 6) AS amount "
         f"FROM {{fact}} f JOIN {DIM} d ON f.{PART} = d.d_day "
         f"WHERE d.pick = 1 AND d.d_day % {{m}} = {{r}} "
         f"GROUP BY f.{PART} ORDER BY f.{PART}")


# ------------------------------------------------------------------------- queries

@dataclass(frozen=True)
class Variant:
    """One dimension filter: its SQL's ``m`` and ``r`` and the rows it must give."""

    m: int
    r: int
    rows: tuple[tuple[int, int, float], ...]


def expected_rows(n: int, keep: int, m: int, r: int) -> list[tuple[int, int, float]]:
    """(day, rows, sum of amount) per kept day with ``day % m == r``: every partition holds
    the generator's template rows (:func:`tpcds.partition_scale.expected`)."""
    from tpcds.partition_scale import expected

    return [row for row in expected(n, keep) if row[0] % m == r]


def variants(n: int, keep: int) -> list[Variant]:
    """Every filter whose answer is not empty, in a fixed order."""
    out = []
    for m in MODULI:
        for r in range(m):
            rows = expected_rows(n, keep, m, r)
            if rows:
                out.append(Variant(m, r, tuple(rows)))
    if not out:
        raise ValueError(f"no dimension filter keeps a partition of {n} (keep {keep})")
    return out


def pick(variants_: Sequence[Variant], client: int, index: int) -> Variant:
    """Client ``client``'s ``index``-th query: consecutive queries of one client differ, and
    so do the queries the clients run at the same time."""
    return variants_[(client * 7 + index) % len(variants_)]


def normalize(rows: Iterable[Any]) -> tuple[tuple[int, int, float], ...]:
    return tuple((int(x[0]), int(x[1]), round(float(x[2]), 6)) for x in rows)


# ------------------------------------------------------------------------- clients

@dataclass
class Outcome:
    """One query of one client."""

    client: int
    index: int
    m: int
    r: int
    start: float          # seconds after the window's start
    seconds: float
    ok: bool
    correct: Optional[bool] = None
    error: Optional[str] = None


@dataclass
class WindowRun:
    """What the clients of one window did (before summarizing)."""

    outcomes: list[Outcome]
    wall_s: float
    stuck: int = 0        # clients still running at the grace bound (their queries: failed)


def run_clients(sessions: Sequence[Any], fact: str, variants_: Sequence[Variant], *,
                seconds: Optional[float] = None, per_client: Optional[int] = None,
                setup: Optional[Callable[[int, Any], None]] = None,
                teardown: Optional[Callable[[int, Any], None]] = None,
                grace: float = 600.0, first_index: int = 0) -> WindowRun:
    """One thread per session (the same session may appear several times: threads sharing
    one SparkSession), each running the star join until ``seconds`` have passed since the
    common start (no query started after it) or ``per_client`` queries are done; every
    result is checked. ``setup(client, session)`` runs first in each thread (not timed)."""
    if (seconds is None) == (per_client is None):
        raise ValueError("give seconds or per_client, not both")
    n = len(sessions)
    lock = threading.Lock()
    outcomes: list[Outcome] = []
    t0_box: list[float] = []
    # the last thread to arrive stamps the common start before any is released
    ready = threading.Barrier(n + 1, action=lambda: t0_box.append(time.perf_counter()))

    def client(i: int) -> None:
        spark = sessions[i]
        broken = None
        try:
            if setup is not None:
                setup(i, spark)
        except Exception as exc:
            broken = f"client setup: {type(exc).__name__}: {exc}"[:300]
        ready.wait()
        t0 = t0_box[0]
        if broken is not None:
            with lock:
                outcomes.append(Outcome(i, first_index, 0, 0, 0.0, 0.0, False, error=broken))
            return
        deadline = None if seconds is None else t0 + seconds
        j = first_index
        try:
            while True:
                if per_client is not None and j - first_index >= per_client:
                    break
                if deadline is not None and time.perf_counter() >= deadline:
                    break
                v = pick(variants_, i, j)
                started = time.perf_counter()
                o = Outcome(i, j, v.m, v.r, started - t0, 0.0, False)
                try:
                    got = normalize(spark.sql(QUERY.format(fact=fact, m=v.m, r=v.r)).collect())
                    o.ok = True
                    o.correct = got == v.rows
                    if not o.correct:
                        o.error = (f"rows differ: {len(got)} rows, first {got[:2]}; "
                                   f"expected {len(v.rows)}, first {v.rows[:2]}")
                except Exception as exc:
                    o.error = f"{type(exc).__name__}: " + (
                        str(exc).strip().splitlines() or [""])[0][:300]
                o.seconds = time.perf_counter() - started
                with lock:
                    outcomes.append(o)
                j += 1
        finally:
            if teardown is not None:
                try:
                    teardown(i, spark)
                except Exception:
                    log.debug("client %d teardown", i, exc_info=True)

    threads = [threading.Thread(target=client, args=(i,), name=f"client-{i}", daemon=True)
               for i in range(n)]
    for t in threads:
        t.start()
    ready.wait()
    bound = t0_box[0] + (seconds or 0.0) + grace
    for t in threads:
        t.join(max(0.0, bound - time.perf_counter()))
    wall = time.perf_counter() - t0_box[0]
    stuck = sum(t.is_alive() for t in threads)
    with lock:
        return WindowRun(sorted(outcomes, key=lambda o: (o.start, o.client)), wall, stuck)


# ------------------------------------------------------------------------- CPU from /proc

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def proc_cpu(pid: int) -> Optional[float]:
    """CPU seconds (user + system) the process has used, or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields_ = stat.rsplit(")", 1)[1].split()
    return (int(fields_[11]) + int(fields_[12])) / _TICK


def machine_busy() -> Optional[tuple[float, float]]:
    """(busy, total) jiffies of the whole machine (every core)."""
    try:
        parts = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return None
    vals = [int(x) for x in parts]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    return float(sum(vals) - idle), float(sum(vals))


def _thread_cpu(pid: int) -> dict[str, tuple[str, float]]:
    """Every live thread of ``pid``: its id -> (name, CPU seconds)."""
    out: dict[str, tuple[str, float]] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        f = stat.rsplit(")", 1)[1].split()
        out[tid] = (name, (int(f[11]) + int(f[12])) / _TICK)
    return out


class ThreadCpu:
    """A JVM's CPU between ``start()`` and ``stop()`` by thread name (digits folded, so a
    pool is one line: ``GC Thread#``, ``C# CompilerThre``, ``shuffle-exchang``), with the CPU of
    threads that ended inside the window as one line of its own (the whole process's CPU less
    the live threads'): where a mode spends the driver's cores per query, JIT and GC
    included, which a Flight Recording's samples of Java code leave out."""

    ENDED = "(threads that ended in the window)"

    def __init__(self, pid: Optional[int]) -> None:
        self.pid = pid
        self._t0: dict[str, tuple[str, float]] = {}
        self._p0: Optional[float] = None

    def start(self) -> "ThreadCpu":
        if self.pid:
            self._t0 = _thread_cpu(self.pid)
            self._p0 = proc_cpu(self.pid)
        return self

    def stop(self) -> dict[str, float]:
        """CPU seconds by thread-name group over the window."""
        if not self.pid or self._p0 is None:
            return {}
        t1, p1 = _thread_cpu(self.pid), proc_cpu(self.pid)
        by: collections.Counter = collections.Counter()
        for tid, (name, cpu) in t1.items():
            by[re.sub(r"\d+", "#", name)] += cpu - self._t0.get(tid, (name, 0.0))[1]
        if p1 is not None:
            by[self.ENDED] += max(0.0, (p1 - self._p0) - sum(by.values()))
        return {k: round(v, 3) for k, v in by.items() if v > 0}


class CpuWatch:
    """CPU used by named processes between ``start()`` and ``stop()``, as cores busy."""

    def __init__(self, pids: dict[str, Optional[int]]) -> None:
        self.pids = {k: v for k, v in pids.items() if v}
        self._t0 = 0.0
        self._c0: dict[str, Optional[float]] = {}
        self._m0: Optional[tuple[float, float]] = None

    def start(self) -> "CpuWatch":
        self._t0 = time.perf_counter()
        self._c0 = {k: proc_cpu(p) for k, p in self.pids.items()}
        self._m0 = machine_busy()
        return self

    def stop(self) -> dict[str, float]:
        wall = max(1e-9, time.perf_counter() - self._t0)
        out = {}
        for k, p in self.pids.items():
            a, b = self._c0.get(k), proc_cpu(p)
            if a is not None and b is not None:
                out[k] = round((b - a) / wall, 2)
        m1 = machine_busy()
        if self._m0 and m1 and m1[1] > self._m0[1]:
            out["machine"] = round((os.cpu_count() or 1) * (m1[0] - self._m0[0])
                                   / (m1[1] - self._m0[1]), 2)
        return out


# ------------------------------------------------------------------------- profilers

_PROJECT = ("dpp", "hive_splits", "coordinator", "collectors")
_ROOT = Path(__file__).resolve().parent.parent


def _short(filename: str) -> str:
    m = re.search(r"site-packages/(.*)$", filename) or re.search(r"lib/python3\.\d+/(.*)$",
                                                                  filename)
    if m:
        return m.group(1)
    try:
        return str(Path(filename).resolve().relative_to(_ROOT))
    except ValueError:
        return filename


def _is_project(filename: str) -> bool:
    s = _short(filename)
    return s.split("/", 1)[0] in _PROJECT


def thread_cpu(native_id: int) -> Optional[float]:
    """CPU seconds one thread of this process has used (``/proc/self/task``)."""
    try:
        stat = Path(f"/proc/self/task/{native_id}/stat").read_text()
    except OSError:
        return None
    f = stat.rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / _TICK


_WAITING = "running Python (or waiting for the GIL)"


class PySampler:
    """Every ``interval`` s, each thread's Python stack (``sys._current_frames``): its role
    (a client thread, a py4j callback thread running dpp's hook — the JVM's calls into
    Python —, a dpp pool thread), what it waits on (the JVM through py4j, a lock or
    condition, a future, a sleep; else running Python, which under the GIL means running or
    waiting to run) and its innermost dpp / hive_splits frame. Idle threads (a callback
    thread waiting for the JVM's next call, an idle pool worker) are not counted. Each
    thread's CPU time over the window (``/proc/self/task``) is added up per role: Python
    holding the GIL shows there."""

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        self.samples = 0
        self.lag: list[float] = []    # how late each sample was (the GIL, mostly)
        self.states: collections.Counter = collections.Counter()       # (role, state)
        self.frames: collections.Counter = collections.Counter()       # (role, state, frame)
        self.running_hist: collections.Counter = collections.Counter()  # threads "running"
        self.hook_active_hist: collections.Counter = collections.Counter()
        self.roles: dict[int, collections.Counter] = {}                # native id -> roles
        self.cpu0: dict[int, float] = {}
        self.cpu_by_role: dict[str, float] = {}
        self.wall = 0.0
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> "PySampler":
        self.cpu0 = {t.native_id: c for t in threading.enumerate()
                     if t.native_id is not None and (c := thread_cpu(t.native_id)) is not None}
        self._t0 = time.perf_counter()
        self._thread = threading.Thread(target=self._run, name="py-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.wall = time.perf_counter() - self._t0
        by_role: dict[str, float] = collections.defaultdict(float)
        for t in threading.enumerate():
            if t.native_id is None or t.name == "py-sampler":
                continue
            c = thread_cpu(t.native_id)
            if c is None:
                continue
            seen = self.roles.get(t.native_id)
            role = seen.most_common(1)[0][0] if seen else "idle / other"
            by_role[role] += c - self.cpu0.get(t.native_id, 0.0)
        self.cpu_by_role = {k: round(v / max(1e-9, self.wall), 3)
                            for k, v in sorted(by_role.items(), key=lambda kv: -kv[1])}
        return self.summary()

    def _run(self) -> None:
        me = threading.get_ident()
        nxt = time.perf_counter() + self.interval
        while not self._stop.is_set():
            delay = nxt - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            now = time.perf_counter()
            self.lag.append(max(0.0, now - nxt))
            nxt = max(nxt + self.interval, now)
            threads = {t.ident: t for t in threading.enumerate()}
            frames = sys._current_frames()
            running = 0
            hook_active = 0
            for ident, frame in frames.items():
                if ident == me:
                    continue
                t = threads.get(ident)
                try:
                    got = self.classify(t.name if t else "?", frame)
                except Exception:   # a frame caught mid-change: skipped, never the sampler
                    log.debug("py sampler", exc_info=True)
                    continue
                if got is None:
                    continue
                role, state, where = got
                if t is not None and t.native_id is not None:
                    self.roles.setdefault(t.native_id, collections.Counter())[role] += 1
                self.states[(role, state)] += 1
                self.frames[(role, state, where)] += 1
                running += state == _WAITING
                hook_active += role == "py4j callback (dpp hook)"
            del frames
            self.samples += 1
            self.running_hist[running] += 1
            self.hook_active_hist[hook_active] += 1

    @staticmethod
    def classify(name: str, frame: Any) -> Optional[tuple[str, str, str]]:
        stack = []   # innermost first
        f = frame
        while f is not None:
            stack.append(f)
            f = f.f_back
        files = [_short(x.f_code.co_filename) for x in stack]
        if name in ("py-sampler", "jvm-sampler", "sched-sampler", "MainThread"):
            return None
        project = next((x for x in stack if _is_project(x.f_code.co_filename)), None)
        py4j = [s for s in files if s.startswith("py4j/")]
        if name.startswith("client-"):
            role = "client thread"
        elif name.startswith("dpp"):
            role = "dpp pool thread"
        elif py4j and project is not None:
            role = "py4j callback (dpp hook)"
        else:
            return None   # py4j's idle server threads, its finalizer, pyspark's own
        leaf = stack[0]
        lf, fn = files[0], leaf.f_code.co_name
        text = linecache.getline(leaf.f_code.co_filename, leaf.f_lineno or 0).strip()
        if role == "dpp pool thread" and project is None:
            return None   # waiting for work
        if lf == "socket.py" or lf.startswith("py4j/") and ("readline" in text or "recv" in text):
            state = "py4j: waiting on the JVM" if py4j else "socket"
        elif lf in ("threading.py", "queue.py") or "acquire(" in text or \
                (text.startswith("with ") and "lock" in text.lower()):
            state = "waiting: lock / condition"
        elif lf.startswith("concurrent/futures") or ".result(" in text or "cf.wait(" in text:
            state = "waiting: future"
        elif "sleep(" in text:
            state = "sleep"
        elif lf in ("selectors.py", "select.py"):
            state = "socket"
        else:
            state = _WAITING
        if project is not None:
            where = (f"{_short(project.f_code.co_filename)}:{project.f_code.co_name}:"
                     f"{project.f_lineno}")
        else:   # a client thread: the pyspark call it is in
            caller = next((x for x in stack if _short(x.f_code.co_filename).startswith(
                ("pyspark/sql", "tpcds/"))), leaf)
            where = f"{_short(caller.f_code.co_filename)}:{caller.f_code.co_name}:{caller.f_lineno}"
        return role, state, where

    def summary(self, top: int = 14) -> dict[str, Any]:
        n = max(1, self.samples)
        states = [{"role": r, "state": s, "threads_avg": round(c / n, 2)}
                  for (r, s), c in self.states.most_common()]
        frames = [{"role": r, "state": s, "where": w, "threads_avg": round(c / n, 2)}
                  for (r, s, w), c in self.frames.most_common(top)]
        lag = sorted(self.lag)
        return {"samples": self.samples, "interval_s": self.interval,
                "sampler_lag_ms": {"median": round(1000 * lag[len(lag) // 2], 1) if lag else None,
                                   "p90": round(1000 * lag[int(len(lag) * 0.9)], 1)
                                   if lag else None},
                "states": states, "frames": frames,
                "cpu_cores_by_role": self.cpu_by_role,
                "running_threads_hist": dict(sorted(self.running_hist.items())),
                "hook_threads_hist": dict(sorted(self.hook_active_hist.items()))}


_HIVE = ("org.apache.derby", "org.apache.hadoop.hive", "org.apache.spark.sql.hive.client",
         "org.apache.spark.sql.hive.HiveExternalCatalog")
_JOB_WAIT = ("org.apache.spark.scheduler.JobWaiter", "org.apache.spark.util.ThreadUtils$.await",
             "org.apache.spark.scheduler.DAGScheduler.runJob")
_BLOCKING = ("Unsafe.park", "SocketDispatcher.read", "EPoll.wait", "Object.wait",
             "Thread.sleep", "Net.accept", "SocketInputStream.read", "FileDispatcherImpl.read",
             "FileInputStream.readBytes")
_CATALOG_PLUMBING = ("org.apache.spark.sql.hive.",
                     "org.apache.spark.sql.catalyst.catalog.ExternalCatalogWithListener")
_PLUMBING = ("java.", "jdk.", "sun.", "scala.", "com.google.", "io.netty.")


def _py4j_entry(frames: list[str]) -> Optional[str]:
    """The JVM method Python called through py4j on this stack (Class.method), or None."""
    for i, f in enumerate(frames):
        if f.startswith("java.lang.reflect.Method.invoke"):
            j = i - 1
            while j >= 0 and frames[j].startswith(("jdk.internal.reflect", "java.lang.reflect")):
                j -= 1
            if j >= 0:
                return ".".join(frames[j].split(".")[-2:])
    return None


def jvm_thread(name: str, state: str, frames: list[str]) -> Optional[tuple[str, str]]:
    """What one JVM thread of a dump is doing, as (category, the frame that says where), or
    None for an idle one. ``frames``: innermost first. The innermost frame that tells wins:
    a dpp bridge thread whose Python called back into the metastore is in the metastore."""
    text = "\n".join(frames)

    def origin(skip: tuple[str, ...] = ()) -> str:
        # the first frame outward that is neither plumbing nor the metastore client's
        for f in frames:
            if not f.startswith(_PLUMBING + _HIVE + _CATALOG_PLUMBING + skip) \
                    and "$$Lambda" not in f:
                entry = _py4j_entry(frames)
                return f + (f" ← py4j {entry}" if entry else "")
        return frames[0] if frames else "?"

    if name.startswith("Executor task launch worker"):
        return "executor task running (holds a core)", origin()
    if name.startswith("dag-scheduler-event-loop"):
        if frames and "LinkedBlockingDeque" not in text:
            return "DAG scheduler event loop busy", origin()
        return None
    if state == "BLOCKED":
        return "BLOCKED on a monitor", origin(("org.apache.hadoop.",))
    for i, f in enumerate(frames):
        if f.startswith(_HIVE):
            if "org.apache.spark" not in text:
                return None   # Derby's or Hive's own background threads
            return "in the Hive metastore client (Derby)", origin(("org.apache.hadoop.",
                                                                    "org.datanucleus.",
                                                                    "javax.jdo."))
        if f.startswith("py4j.ClientServerConnection.readBlockingResponse") or \
                f.startswith("py4j.CallbackConnection.sendCommand"):
            if "py4j.ClientServerConnection.waitForCommands" in "\n".join(frames[i:]) and \
                    not name.startswith("dpp-bridge"):
                return "a py4j thread waits on Python (a callback)", frames[i]
            return "dpp bridge thread waits for Python's answer (py4j callback)", frames[i]
        if f.startswith("dpp.spark.DppHook.call"):
            if "dpp.spark.DppFileIndex" in text:
                return "scan listing waits for dpp's answer (DppFileIndex)", f
            return "optimizer rule waits for dpp's answer (DppRule)", f
        if f.startswith(_JOB_WAIT):
            return "query waits for its Spark job / broadcast", origin()
        if f.startswith("py4j.ClientServerConnection.waitForCommands") or \
                f.startswith("py4j.GatewayConnection.run"):
            return None   # a py4j thread waiting for Python's next command
    if not frames or state != "RUNNABLE" or any(b in frames[0] for b in _BLOCKING):
        return None
    if "org.apache.spark" in text or "dpp." in text:
        return "other driver work (RUNNABLE)", origin()
    return None


class JvmSampler:
    """A ``jstack`` of a JVM every ``interval`` s; each thread put in the first category of
    :func:`jvm_thread`'s category (idle threads in none), plus the monitors threads are
    BLOCKED on and where."""

    def __init__(self, pid: int, interval: float = 2.0, keep_dir: Optional[Path] = None) -> None:
        self.pid = pid
        self.interval = interval
        self.keep_dir = keep_dir
        self.dumps = 0
        self.failed: Optional[str] = None
        self.cats: collections.Counter = collections.Counter()
        self.blocked: collections.Counter = collections.Counter()
        self.tops: collections.Counter = collections.Counter()
        self.per_dump: list[dict[str, int]] = []
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> "JvmSampler":
        if shutil.which("jstack") is None:
            self.failed = "no jstack on PATH"
            return self
        self._thread = threading.Thread(target=self._run, name="jvm-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
        return self.summary()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                text = subprocess.run(["jstack", str(self.pid)], capture_output=True,
                                      text=True, timeout=20).stdout
            except Exception as exc:
                self.failed = f"jstack: {exc}"
                continue
            if "Full thread dump" not in text:
                self.failed = "jstack printed no thread dump"
                continue
            if self.keep_dir is not None and self.dumps < 3:
                self.keep_dir.mkdir(parents=True, exist_ok=True)
                (self.keep_dir / f"jstack-{self.dumps}.txt").write_text(text)
            self.add(text)

    def add(self, text: str) -> None:
        self.dumps += 1
        counts: collections.Counter = collections.Counter()
        for block in text.split("\n\n"):
            head = block.lstrip("\n").split("\n", 1)
            if not head or not head[0].startswith('"'):
                continue
            name = head[0][1:head[0].find('"', 1)]
            m = re.search(r"java\.lang\.Thread\.State: (\w+)", block)
            state = m.group(1) if m else "?"
            frames = re.findall(r"\tat ([^\n(]+)", block)
            got = jvm_thread(name, state, frames)
            if got is None:
                continue
            cat, where = got
            counts[cat] += 1
            if cat.startswith("BLOCKED"):
                lock = re.search(r"waiting to lock <[^>]+> \(a ([^)]+)\)", block)
                self.blocked[(lock.group(1) if lock else "?", where)] += 1
            else:
                self.tops[(cat, where)] += 1
        self.cats.update(counts)
        self.per_dump.append(dict(counts))

    def summary(self, top: int = 10) -> dict[str, Any]:
        n = max(1, self.dumps)
        return {"dumps": self.dumps, "interval_s": self.interval, "failed": self.failed,
                "threads_avg": {c: round(v / n, 2) for c, v in self.cats.most_common()},
                "threads_max": {c: max((d.get(c, 0) for d in self.per_dump), default=0)
                                for c in self.cats},
                "blocked": [{"monitor": m, "at": f, "threads_avg": round(v / n, 2)}
                            for (m, f), v in self.blocked.most_common(top)],
                "top_frames": [{"category": c, "frame": f, "threads_avg": round(v / n, 2)}
                               for (c, f), v in self.tops.most_common(top)]}


_JFC = """<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="dpp concurrency">
  <event name="jdk.JavaMonitorEnter">
    <setting name="enabled">true</setting><setting name="stackTrace">true</setting>
    <setting name="threshold">1 ms</setting>
  </event>
  <event name="jdk.ExecutionSample">
    <setting name="enabled">true</setting><setting name="period">20 ms</setting>
  </event>
</configuration>
"""

# where a CPU sample of the JVM is, by its innermost frame in one of these (first match)
_CPU_PLACES = (
    (("org.apache.derby", "org.datanucleus", "org.apache.hadoop.hive", "javax.jdo",
      "org.apache.spark.sql.hive"), "Hive metastore client (Derby, in the driver)"),
    (("py4j.",), "py4j"),
    (("dpp.",), "dpp's JVM side (rule, file index)"),
    (("org.apache.spark.sql.connect", "io.grpc", "org.sparkproject.connect"),
     "Spark Connect service"),
    (("org.apache.spark.scheduler", "org.apache.spark.rpc", "org.apache.spark.storage",
      "org.apache.spark.serializer", "org.apache.spark.broadcast", "org.apache.spark.util.Closure"),
     "Spark scheduler / RPC / serialization"),
    (("org.apache.spark.sql", "org.apache.spark.rdd", "org.apache.spark.SparkContext"),
     "Spark SQL on the driver (analysis, optimizer, planning, listing)"),
    (("org.apache.logging", "org.slf4j"), "logging"),
    (("org.apache.hadoop",), "Hadoop (filesystem, conf)"),
)


def _jfr_seconds(v: Any) -> float:
    if isinstance(v, (int, float)):
        return float(v) / 1e9
    m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?", str(v))
    if m:
        h, mi, sec = m.groups()
        return int(h or 0) * 3600 + int(mi or 0) * 60 + float(sec or 0)
    m = re.fullmatch(r"([\d.]+)\s*(ns|us|ms|s)", str(v).strip())
    if m:
        return float(m.group(1)) * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]
    return 0.0


def _jfr_frames(event: dict[str, Any]) -> list[str]:
    out = []
    for fr in ((event.get("values") or {}).get("stackTrace") or {}).get("frames") or []:
        meth = fr.get("method") or {}
        cls = ((meth.get("type") or {}).get("name") or "?").replace("/", ".")
        out.append(f"{cls}.{meth.get('name', '?')}")
    return out


class JfrSampler:
    """A Java Flight Recording of the driver JVM over the window (``jcmd JFR.start``): every
    monitor a thread waited at least 1 ms to enter (``jdk.JavaMonitorEnter``: the monitor's
    class, for how long, from where) and a CPU sample of every running Java thread every
    20 ms (``jdk.ExecutionSample``), put by its innermost frame in :data:`_CPU_PLACES`. Unlike
    ``jstack`` snapshots, the blocked time is measured, not sampled."""

    def __init__(self, pid: int, folder: Path, label: str) -> None:
        self.pid = pid
        self.folder = folder
        self.label = label
        self.name = f"dppconc{os.getpid()}"
        self.failed: Optional[str] = None
        self.t0 = 0.0

    def _jcmd(self, *args: str) -> str:
        r = subprocess.run(["jcmd", str(self.pid), *args], capture_output=True, text=True,
                           timeout=120)
        if r.returncode != 0 or "Could not" in r.stdout or "Exception" in r.stdout:
            raise RuntimeError((r.stdout + r.stderr).strip()[-300:])
        return r.stdout

    def start(self) -> "JfrSampler":
        if shutil.which("jcmd") is None or shutil.which("jfr") is None:
            self.failed = "no jcmd / jfr on PATH"
            return self
        self.folder.mkdir(parents=True, exist_ok=True)
        self.jfc = self.folder / "dpp-concurrency.jfc"
        self.jfc.write_text(_JFC)
        self.file = self.folder / f"{self.label}.jfr"
        try:
            self._jcmd("JFR.start", f"name={self.name}", f"settings={self.jfc}")
        except Exception as exc:
            self.failed = f"JFR.start: {exc}"
        self.t0 = time.perf_counter()
        return self

    def stop(self) -> dict[str, Any]:
        if self.failed:
            return {"failed": self.failed}
        wall = time.perf_counter() - self.t0
        try:
            self._jcmd("JFR.stop", f"name={self.name}", f"filename={self.file}")
            r = subprocess.run(["jfr", "print", "--json", "--stack-depth", "64", "--events",
                                "jdk.JavaMonitorEnter,jdk.ExecutionSample", str(self.file)],
                               capture_output=True, text=True, timeout=600)
            events = json.loads(r.stdout)["recording"]["events"]
        except Exception as exc:
            return {"failed": f"JFR: {type(exc).__name__}: {str(exc)[:300]}"}
        return self.summarize(events, wall)

    @staticmethod
    def summarize(events: list[dict[str, Any]], wall: float, top: int = 10) -> dict[str, Any]:
        blocked: dict[str, list[float]] = collections.defaultdict(list)
        callers: collections.Counter = collections.Counter()
        cpu: collections.Counter = collections.Counter()
        cpu_frames: collections.Counter = collections.Counter()
        samples = 0
        for e in events:
            kind = e.get("type")
            v = e.get("values") or {}
            frames = _jfr_frames(e)
            if kind == "jdk.JavaMonitorEnter":
                cls = ((v.get("monitorClass") or {}).get("name") or "?").replace("/", ".")
                d = _jfr_seconds(v.get("duration"))
                blocked[cls].append(d)
                caller = next((f for f in frames if not f.startswith(
                    _PLUMBING + _HIVE + _CATALOG_PLUMBING) and "$$Lambda" not in f), "?")
                entry = _py4j_entry(frames)
                if entry:
                    caller += f" ← py4j {entry}"
                callers[(cls, caller)] += d
            elif kind == "jdk.ExecutionSample":
                samples += 1
                thread = ((v.get("sampledThread") or {}).get("javaName") or "")
                if thread.startswith("Executor task launch"):
                    place = "executor tasks (the query's and build sides' scans)"
                else:
                    place = "other JVM code"
                    for f in frames:
                        hit = next((p for prefixes, p in _CPU_PLACES if f.startswith(prefixes)),
                                   None)
                        if hit is not None:
                            place = hit
                            break
                cpu[place] += 1
                if frames:
                    cpu_frames[(place, frames[0])] += 1
        return {"wall_s": round(wall, 2),
                "monitor_wait_s": {c: round(sum(d), 2) for c, d in
                                   sorted(blocked.items(), key=lambda kv: -sum(kv[1]))[:top]},
                "monitor_waits": {c: len(d) for c, d in blocked.items()},
                "monitor_wait_by_caller_s": [
                    {"monitor": c, "caller": f, "seconds": round(s, 2)}
                    for (c, f), s in callers.most_common(top)],
                "cpu_samples": samples,
                "cpu_share": {p: round(n / max(1, samples), 3) for p, n in cpu.most_common()},
                "cpu_top_frames": [{"place": p, "frame": f, "share": round(n / max(1, samples), 3)}
                                   for (p, f), n in cpu_frames.most_common(top)]}


class SchedulerSampler:
    """Spark's status tracker every ``interval`` s (classic: this process's SparkContext):
    jobs and stages active, tasks running, tasks waiting for a core."""

    def __init__(self, sc: Any, interval: float = 1.0) -> None:
        self.sc = sc
        self.interval = interval
        self.rows: list[tuple[int, int, int, int]] = []
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> "SchedulerSampler":
        self._thread = threading.Thread(target=self._run, name="sched-sampler", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        tracker = self.sc.statusTracker()
        while not self._stop.wait(self.interval):
            try:
                jobs = list(tracker.getActiveJobsIds())
                stages = list(tracker.getActiveStageIds())
                running = waiting = 0
                for s in stages:
                    info = tracker.getStageInfo(s)
                    if info is None:
                        continue
                    running += info.numActiveTasks
                    waiting += max(0, info.numTasks - info.numActiveTasks
                                   - info.numCompletedTasks - info.numFailedTasks)
                self.rows.append((len(jobs), len(stages), running, waiting))
            except Exception:
                log.debug("status tracker", exc_info=True)

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        if not self.rows:
            return {"samples": 0}
        k = len(self.rows)
        avg = [round(sum(r[i] for r in self.rows) / k, 2) for i in range(4)]
        return {"samples": k, "active_jobs_avg": avg[0], "active_stages_avg": avg[1],
                "tasks_running_avg": avg[2], "tasks_waiting_avg": avg[3],
                "share_cores_full": round(sum(r[2] >= self._cores() for r in self.rows) / k, 2)}

    def _cores(self) -> int:
        try:
            return int(self.sc.defaultParallelism)
        except Exception:
            return 2


# ------------------------------------------------------------------------- dpp reports

def read_reports(path: Optional[Path], start_line: int = 0) -> tuple[list[dict[str, Any]], int]:
    """The JSON-lines reports of ``spark.dpp.report.path`` from line ``start_line``; the
    number of lines now."""
    if path is None or not path.exists():
        return [], start_line
    lines = path.read_text().splitlines()
    out = []
    for line in lines[start_line:]:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out, len(lines)


def report_summary(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """What dpp's reports of one window say: how many queries it pruned, partitions kept,
    filters not complete, mean phases."""
    if not reports:
        return {"reports": 0}
    applied = [t for r in reports for t in r.get("tables") or [] if t.get("pruning") == "applied"]
    phases: dict[str, list[float]] = collections.defaultdict(list)
    for r in reports:
        for k, v in (r.get("phases") or {}).items():
            if isinstance(v, (int, float)):
                phases[k].append(float(v))
    outcomes = collections.Counter(f.get("outcome") for r in reports
                                   for t in r.get("tables") or [] for f in t.get("filters") or [])
    return {"reports": len(reports), "tables_pruned": len(applied),
            "partitions_kept_avg": round(sum(t.get("partitions_kept") or 0 for t in applied)
                                         / len(applied), 1) if applied else None,
            "filter_outcomes": dict(outcomes),
            "phases_avg_s": {k: round(sum(v) / len(v), 4) for k, v in sorted(phases.items())},
            "phases_max_s": {k: round(max(v), 4) for k, v in sorted(phases.items())}}


# ------------------------------------------------------------------------- windows

@dataclass
class Window:
    """One measured (or profiled) window: a front end, a mode, N clients."""

    front: str
    mode: str
    clients: int
    planned_s: float
    wall_s: float = 0.0
    completed: int = 0
    correct: int = 0
    wrong: int = 0
    failed: int = 0
    stuck: int = 0
    qpm: float = 0.0
    latency_s: dict[str, float] = field(default_factory=dict)
    per_client: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    cpu_cores: dict[str, float] = field(default_factory=dict)
    jvm_threads_s: dict[str, float] = field(default_factory=dict)   # ThreadCpu, seconds
    dpp: dict[str, Any] = field(default_factory=dict)
    profiled: bool = False
    profile: dict[str, Any] = field(default_factory=dict)
    round: int = 0   # which pass over the cells (``--rounds``)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(w: Window, run: WindowRun) -> Window:
    outs = run.outcomes
    w.wall_s = round(run.wall_s, 3)
    w.completed = sum(o.ok for o in outs)
    w.correct = sum(bool(o.ok and o.correct) for o in outs)
    w.wrong = sum(bool(o.ok and not o.correct) for o in outs)
    w.failed = sum(not o.ok for o in outs) + run.stuck
    w.stuck = run.stuck
    w.qpm = round(60.0 * w.correct / run.wall_s, 2) if run.wall_s > 0 else 0.0
    lat = sorted(o.seconds for o in outs if o.ok)
    if lat:
        w.latency_s = {"median": round(lat[len(lat) // 2], 3),
                       "p90": round(lat[min(len(lat) - 1, int(len(lat) * 0.9))], 3),
                       "max": round(lat[-1], 3)}
    counts = collections.Counter(o.client for o in outs if o.ok)
    w.per_client = [counts.get(i, 0) for i in range(w.clients)]
    w.errors = sorted({o.error for o in outs if o.error})[:5]
    return w


@dataclass
class Config:
    data: Path
    out: Path
    partitions: int = 1000
    keep: int = 30
    seconds: float = 60.0
    clients: list[int] = field(default_factory=lambda: [1, 4, 16])
    fronts: list[str] = field(default_factory=lambda: list(FRONTS))
    modes: list[str] = field(default_factory=lambda: list(MODES))
    kind: str = "catalog"
    profile_seconds: float = 0.0
    warm_up_seconds: float = 30.0
    conf: list[str] = field(default_factory=list)
    driver_memory: str = "2g"
    rounds: int = 1


class Front:
    """A front end's sessions and settings; ``window`` runs one measured window."""

    name = "?"

    def __init__(self, cfg: Config, say: Progress) -> None:
        self.cfg = cfg
        self.say = say
        self.fact = FACT
        self.variants = variants(cfg.partitions, cfg.keep)
        self.reports: Optional[Path] = None
        self._report_line = 0
        self._mode: Optional[str] = None

    # what a front end provides
    def sessions(self, n: int) -> list[Any]:
        raise NotImplementedError

    def set_mode(self, mode: str, sessions: Sequence[Any]) -> None:
        raise NotImplementedError

    def cpu_pids(self) -> dict[str, Optional[int]]:
        return {}

    def profilers(self) -> list[Any]:
        return []

    def setup(self, i: int, spark: Any) -> None:
        pass

    def teardown(self, i: int, spark: Any) -> None:
        pass

    def close(self) -> None:
        pass

    # the common part
    def warm_up(self, n: int) -> None:
        """Each mode runs unmeasured for ``cfg.warm_up_seconds`` at ``n`` clients (at least
        one query each) before any window: the driver JVM compiles its hot code in the first
        minute or so, and a window measured before that is slower for whichever mode runs
        first (measured: Spark's first 16-client window at 172 q/min, its later ones at
        240-260 on the same code)."""
        for mode in self.cfg.modes:
            sessions = self.sessions(n)
            self.set_mode(mode, sessions)
            run = run_clients(sessions, self.fact, self.variants, per_client=1,
                              setup=self.setup, teardown=self.teardown, first_index=10_000)
            if self.cfg.warm_up_seconds > 0:
                more = run_clients(sessions, self.fact, self.variants,
                                   seconds=self.cfg.warm_up_seconds, setup=self.setup,
                                   teardown=self.teardown, first_index=20_000)
                run.outcomes.extend(more.outcomes)
                run.wall_s += more.wall_s
            bad = [o.error for o in run.outcomes if not (o.ok and o.correct)]
            self.say(f"  {self.name} warm-up {mode} ({n} client(s)): {len(run.outcomes)} "
                     f"queries in {run.wall_s:.1f}s" + (f"; NOT RIGHT: {bad[0]}" if bad else ""))

    def window(self, mode: str, n: int, seconds: float, profile: bool = False) -> Window:
        sessions = self.sessions(n)
        self.set_mode(mode, sessions)
        _, self._report_line = read_reports(self.reports, self._report_line)
        profs = [p.start() for p in self.profilers()] if profile else []
        pids = self.cpu_pids()
        cpu = CpuWatch(pids).start()
        threads = ThreadCpu(next((v for k, v in pids.items() if "JVM" in k and v), None)).start()
        run = run_clients(sessions, self.fact, self.variants, seconds=seconds,
                          setup=self.setup, teardown=self.teardown)
        w = Window(self.name, mode, n, seconds)
        w.cpu_cores = cpu.stop()
        w.jvm_threads_s = threads.stop()
        for p in reversed(profs):   # the recording first: it ends with the window
            w.profile[type(p).__name__] = p.stop()
        w.profiled = profile
        summarize(w, run)
        time.sleep(0.5)   # the last report lines are written as the last scan ends
        reports, self._report_line = read_reports(self.reports, self._report_line)
        w.dpp = report_summary(reports)
        self.say(line(w))
        return w


class ClassicFront(Front):
    """One local SparkSession with a Hive catalog, shared by the client threads."""

    name = "classic"

    def __init__(self, cfg: Config, say: Progress, spark: Any = None) -> None:
        super().__init__(cfg, say)
        from tpcds.partition_scale import catalog_table, generate

        self.own_spark = spark is None
        if spark is None:
            from tpcds.cli import make_spark

            os.environ["TPCDS_DRIVER_MEMORY"] = cfg.driver_memory
            spark = make_spark(True, cfg.out / "state-classic", cfg.conf)
        self.spark = spark
        base = generate(cfg.data, cfg.partitions, cfg.keep, say).resolve()
        self.base = base
        self.location = str((base / FACT).resolve())
        spark.read.parquet(str(base / DIM)).createOrReplaceTempView(DIM)
        self.hook = self._hook()
        if cfg.kind == "catalog":
            self.fact = catalog_table(spark, base, self.location, say)
        self.reports = cfg.out.resolve() / "reports-classic.jsonl"
        self.reports.parent.mkdir(parents=True, exist_ok=True)
        self._saved_report_path = spark.conf.get("spark.dpp.report.path", None)
        spark.conf.set("spark.dpp.report.path", str(self.reports))
        self._mode: Optional[str] = None

    def _hook(self) -> Any:
        from dpp import DppSession
        from dpp.frontends.hook.optimizer_hook import OptimizerHook

        session = DppSession(self.spark)
        session.optimizer_hook = OptimizerHook(session)
        return session

    def sessions(self, n: int) -> list[Any]:
        return [self.spark] * n

    def set_mode(self, mode: str, sessions: Sequence[Any]) -> None:
        """Session conf for the whole window (threads share it): Spark's DPP on (its
        defaults) in both modes; dpp's hook on only in ``dpp``. A declared table is opened
        once per mode: dpp's registered folder, or Spark's reader of it."""
        from tpcds.bench import HOOK_KEY, OFF_CONF

        spark = self.spark
        for k in OFF_CONF:
            spark.conf.unset(k)
        spark.conf.set(HOOK_KEY, "true" if mode == "dpp" else "false")
        if self.cfg.kind == "declared" and mode != self._mode:
            spark.catalog.dropTempView(FACT)
            if mode == "dpp":
                self.hook.register_table(FACT, self.location)
                self.hook.ensure_views([FACT])
            else:
                try:
                    self.hook.unregister_table(FACT)
                except Exception:
                    pass
                spark.read.parquet(self.location).createOrReplaceTempView(FACT)
        self._mode = mode

    def setup(self, i: int, spark: Any) -> None:
        spark.sparkContext.setJobGroup(f"concurrency-client-{i}", f"client {i}",
                                       interruptOnCancel=True)

    def teardown(self, i: int, spark: Any) -> None:
        spark.sparkContext.cancelJobGroup(f"concurrency-client-{i}")

    def jvm_pid(self) -> Optional[int]:
        try:
            return int(self.spark._jvm.java.lang.ProcessHandle.current().pid())
        except Exception:
            return None

    def cpu_pids(self) -> dict[str, Optional[int]]:
        return {"python (clients + dpp hook)": os.getpid(), "driver JVM": self.jvm_pid()}

    def profilers(self) -> list[Any]:
        out: list[Any] = [PySampler(), SchedulerSampler(self.spark.sparkContext)]
        pid = self.jvm_pid()
        if pid:
            out.append(JvmSampler(pid, keep_dir=self.cfg.out / "jstack-classic"))
            out.append(JfrSampler(pid, self.cfg.out.resolve() / "jfr",
                                  f"classic-{self._mode}"))
        return out

    def close(self) -> None:
        from tpcds.bench import HOOK_KEY

        spark = self.spark
        try:
            spark.conf.unset(HOOK_KEY)
            if self._saved_report_path is None:
                spark.conf.unset("spark.dpp.report.path")
            else:
                spark.conf.set("spark.dpp.report.path", self._saved_report_path)
            if self.cfg.kind == "declared":
                spark.catalog.dropTempView(FACT)
                try:
                    self.hook.unregister_table(FACT)
                except Exception:
                    pass
            spark.catalog.dropTempView(DIM)
        finally:
            self.hook.close()
            if self.own_spark:
                spark.stop()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """``dpp connect-server`` as a subprocess (its own process group), stopped whatever
    happens: SIGTERM to the server (it stops Spark), then SIGKILL to its group."""

    def __init__(self, state: Path, conf: dict[str, str], driver_memory: str) -> None:
        self.state = state
        self.conf = conf
        self.driver_memory = driver_memory
        self.port = free_port()
        self.proc: Optional[subprocess.Popen] = None
        self.log = state / "connect-server.log"

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        from tpcds.cli import dpp_connect_server_command

        old = os.environ.get("TPCDS_DRIVER_MEMORY")
        os.environ["TPCDS_DRIVER_MEMORY"] = self.driver_memory
        try:
            cmd = dpp_connect_server_command(self.port, self.state, None)
        finally:
            if old is None:
                os.environ.pop("TPCDS_DRIVER_MEMORY", None)
            else:
                os.environ["TPCDS_DRIVER_MEMORY"] = old
        for k, v in self.conf.items():
            cmd += ["--conf", f"{k}={v}"]
        return cmd

    def start(self, timeout: float = 240.0) -> "ServerProcess":
        self.state.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
        env.pop("SPARK_REMOTE", None)
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                         env=env, cwd=self.state, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"dpp connect-server exited ({self.proc.returncode}); "
                                   f"log {self.log}:\n{self._tail()}")
            if b"ready on" in self.log.read_bytes():
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=1.0):
                        return self
                except OSError:
                    pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"dpp connect-server not ready after {timeout:g} s; log {self.log}:"
                           f"\n{self._tail()}")

    def _tail(self) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])
        except OSError:
            return ""

    def jvm_pid(self) -> Optional[int]:
        """The driver JVM: the server process's child running java."""
        if self.proc is None:
            return None
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == self.proc.pid and b"java" in cmdline:
                return int(entry)
        return None

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:   # the server stops Spark itself on SIGTERM; its group goes if it lingers
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=60)
            os.killpg(self.proc.pid, signal.SIGKILL)   # anything it left behind
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass


class ConnectFront(Front):
    """``dpp connect-server`` and one Spark Connect client session per client thread."""

    name = "connect"

    def __init__(self, cfg: Config, say: Progress) -> None:
        super().__init__(cfg, say)
        from tpcds.partition_scale import catalog_table, generate

        if cfg.kind != "catalog":
            raise ValueError("the connect front end benches the catalog table only")
        self.base = generate(cfg.data, cfg.partitions, cfg.keep, say).resolve()
        self.location = str((self.base / FACT).resolve())
        state = cfg.out.resolve() / "state-connect"
        self.reports = state / "reports.jsonl"
        self.server = ServerProcess(state, {**SERVER_CONF,
                                            "spark.dpp.report.path": str(self.reports)},
                                    cfg.driver_memory)
        say(f"connect: starting dpp connect-server on {self.server.url} (log "
            f"{self.server.log})")
        t0 = time.perf_counter()
        self.server.start()
        say(f"connect: ready in {time.perf_counter() - t0:.1f}s")
        self._sessions: list[Any] = []
        try:
            first = self.sessions(1)[0]
            self.fact = catalog_table(first, self.base, self.location, say)
        except BaseException:
            self.close()
            raise

    def sessions(self, n: int) -> list[Any]:
        from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

        while len(self._sessions) < n:
            s = RemoteSparkSession.builder.remote(self.server.url).create()
            for k, v in SERVER_CONF.items():
                s.conf.set(k, v)
            s.read.parquet(str(self.base / DIM)).createOrReplaceTempView(DIM)
            self._sessions.append(s)
        return self._sessions[:n]

    def set_mode(self, mode: str, sessions: Sequence[Any]) -> None:
        for s in sessions:
            s.conf.set(DPP_OFF, "true" if mode == "dpp" else "false")
        self._mode = mode

    def cpu_pids(self) -> dict[str, Optional[int]]:
        return {"python (clients)": os.getpid(),
                "server python (dpp hook)": self.server.proc.pid if self.server.proc else None,
                "server JVM": self.server.jvm_pid()}

    def profilers(self) -> list[Any]:
        pid = self.server.jvm_pid()
        if not pid:
            return []
        return [JvmSampler(pid, keep_dir=self.cfg.out / "jstack-connect"),
                JfrSampler(pid, self.cfg.out.resolve() / "jfr", f"connect-{self._mode}")]

    def close(self) -> None:
        try:
            for s in self._sessions:
                try:
                    s.stop()
                except Exception:
                    pass
        finally:
            self.server.stop()


# ------------------------------------------------------------------------- the benchmark

def run(cfg: Config, say: Progress) -> dict[str, Any]:
    windows: list[Window] = []
    broken: dict[str, str] = {}
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    for front_name in cfg.fronts:
        try:
            front: Front = (ClassicFront if front_name == "classic" else ConnectFront)(cfg, say)
        except Exception as exc:   # the other front end's windows still count
            broken[front_name] = f"{type(exc).__name__}: {str(exc)[:500]}"
            say(f"{front_name}: could not start: {broken[front_name]}")
            continue
        try:
            front.warm_up(min(max(cfg.clients), 4 if front_name == "classic" else 16))
            for rnd in range(cfg.rounds):
                # the driver JVM keeps compiling for minutes: whichever mode runs later
                # runs warmer, so each round swaps the order of the modes in every cell
                for k, n in enumerate(cfg.clients):
                    order = cfg.modes if (k + rnd) % 2 == 0 else list(reversed(cfg.modes))
                    for mode in order:
                        w = front.window(mode, n, cfg.seconds)
                        w.round = rnd
                        windows.append(w)
            if cfg.profile_seconds > 0:
                for mode in cfg.modes:
                    windows.append(front.window(mode, max(cfg.clients), cfg.profile_seconds,
                                                profile=True))
        finally:
            front.close()
    return {"config": {"partitions": cfg.partitions, "keep": cfg.keep, "seconds": cfg.seconds,
                       "clients": cfg.clients, "fronts": cfg.fronts, "modes": cfg.modes,
                       "kind": cfg.kind, "profile_seconds": cfg.profile_seconds,
                       "warm_up_seconds": cfg.warm_up_seconds,
                       "driver_memory": cfg.driver_memory, "conf": cfg.conf,
                       "rounds": cfg.rounds,
                       "cores": os.cpu_count(), "started": started, "commit": _commit(),
                       "variants": len(variants(cfg.partitions, cfg.keep))},
            "windows": [w.to_dict() for w in windows], "broken": broken}


def _commit() -> Optional[str]:
    """The checkout's commit, ``+dirty`` when dpp's or hive_splits' files differ from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=_ROOT,
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "dpp", "hive_splits",
                                "coordinator", "collectors"], cwd=_ROOT, capture_output=True,
                               text=True, timeout=10).stdout.strip()
        return (head + ("+dirty" if dirty else "")) or None
    except Exception:
        return None


def line(w: Window) -> str:
    ph = w.dpp.get("phases_avg_s") or {}
    extra = (f"  dpp reports {w.dpp.get('reports', 0)} (pruned {w.dpp.get('tables_pruned', 0)}"
             + (f", wait {ph['wait']:.2f}s, build {ph.get('build', 0):.2f}s" if "wait" in ph
                else "") + ")") if w.dpp.get("reports") else ""
    cpu = ", ".join(f"{k} {v:.2f}" for k, v in w.cpu_cores.items())
    return (f"  {w.front:<7} {w.mode:<5} N={w.clients:<3} {w.qpm:8.1f} q/min  "
            f"{w.correct} right, {w.wrong} wrong, {w.failed} failed in {w.wall_s:.1f}s"
            + (f"  median {w.latency_s['median']:.2f}s" if w.latency_s else "")
            + ("  [profiled]" if w.profiled else "") + extra + (f"  cores: {cpu}" if cpu else "")
            + (f"\n    errors: {w.errors[0]}" if w.errors else ""))


def _cells(windows: list[dict[str, Any]], front: str, mode: str, n: int
           ) -> list[dict[str, Any]]:
    return [w for w in windows if w["front"] == front and w["mode"] == mode
            and w["clients"] == n and not w["profiled"]]


def median_qpm(windows: list[dict[str, Any]], front: str, mode: str, n: int
               ) -> Optional[float]:
    """The median queries per minute of a cell over its rounds (the lower middle of an even
    count: a cell is never flattered by the average of its two best), or None."""
    qs = sorted(w["qpm"] for w in _cells(windows, front, mode, n))
    return qs[(len(qs) - 1) // 2] if qs else None


def _ratio(a: Optional[float], b: Optional[float]) -> str:
    if a is None or not b:
        return "—"
    return f"{a / b:.2f}×"


def _thread_table(ws: list[dict[str, Any]], top: int = 12) -> list[str]:
    """The driver JVM's CPU per right answer by thread group, one column per window (the
    groups busiest over all windows; ``ThreadCpu``)."""
    ws = [w for w in ws if w.get("jvm_threads_s") and w["correct"]]
    if not ws:
        return []
    total: collections.Counter = collections.Counter()
    for w in ws:
        for k, v in w["jvm_threads_s"].items():
            total[k] += v / w["correct"]
    groups = [k for k, _ in total.most_common(top)]
    head = " | ".join(f"{w['front']} {w['mode']} N={w['clients']}" for w in ws)
    out = ["", "Driver JVM CPU per right answer by thread (ms; digits in names folded; JIT "
           "compiler and GC threads included):", "",
           f"| threads | {head} |", "| --- |" + " ---: |" * len(ws)]
    out.append("| **whole JVM** | " + " | ".join(
        f"{1000 * sum(w['jvm_threads_s'].values()) / w['correct']:.0f}" for w in ws) + " |")
    for g in groups:
        out.append(f"| `{g}` | " + " | ".join(
            f"{1000 * w['jvm_threads_s'].get(g, 0.0) / w['correct']:.1f}" for w in ws) + " |")
    return out


def render_markdown(result: dict[str, Any]) -> str:
    cfg = result["config"]
    ws = result["windows"]
    out = [f"Star join over a {cfg['partitions']:,}-partition fact ({cfg['kind']} table), "
           f"{cfg['variants']} dimension filters rotating per query; windows of "
           f"{cfg['seconds']:g} s after {cfg.get('warm_up_seconds', 0):g} s of unmeasured "
           f"warm-up per mode; {cfg['cores']} cores; every result checked against the "
           f"known answer. Queries per minute = right answers × 60 / wall time (start to "
           f"the last query's end). Commit {cfg.get('commit')}, started {cfg.get('started')}.",
           "",
           "| front end | mode | N | queries/min | right | wrong | failed | median s | p90 s "
           "| q/min per driver-JVM core | cores used (proc: cores) |",
           "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for w in ws:
        if w["profiled"]:
            continue
        lat = w["latency_s"] or {}
        cpu = "; ".join(f"{k}: {v:.2f}" for k, v in w["cpu_cores"].items())
        jvm = next((v for k, v in w["cpu_cores"].items() if "JVM" in k), None)
        per_core = f"{w['qpm'] / jvm:.1f}" if jvm else "—"
        out.append(f"| {w['front']} | {w['mode']} | {w['clients']} | {w['qpm']:.1f} | "
                   f"{w['correct']} | {w['wrong']} | {w['failed']} | "
                   f"{lat.get('median', float('nan')):.2f} | {lat.get('p90', float('nan')):.2f} "
                   f"| {per_core} | {cpu} |")
    rounds = int(cfg.get("rounds") or 1)
    if rounds > 1:
        out += ["", f"Queries per minute per cell over {rounds} rounds (each round swaps the "
                f"order of the modes; median = the lower middle value):", "",
                "| front end | mode | N | rounds | median |", "| --- | --- | ---: | --- | ---: |"]
        for front in cfg["fronts"]:
            for n in cfg["clients"]:
                for mode in cfg["modes"]:
                    qs = [w["qpm"] for w in _cells(ws, front, mode, n)]
                    if qs:
                        out.append(f"| {front} | {mode} | {n} | "
                                   f"{', '.join(f'{q:.1f}' for q in qs)} | "
                                   f"{median_qpm(ws, front, mode, n):.1f} |")
    of = " (medians over rounds)" if rounds > 1 else ""
    out += ["", f"Ratios{of}:", "", "| front end | N | dpp / spark |", "| --- | ---: | ---: |"]
    for front in cfg["fronts"]:
        for n in cfg["clients"]:
            out.append(f"| {front} | {n} | {_ratio(median_qpm(ws, front, 'dpp', n), median_qpm(ws, front, 'spark', n))} |")
    lo, hi = min(cfg["clients"]), max(cfg["clients"])
    out += ["", f"| front end | mode | {hi} clients / {lo} client (scaling) |",
            "| --- | --- | ---: |"]
    for front in cfg["fronts"]:
        for mode in cfg["modes"]:
            out.append(f"| {front} | {mode} | "
                       f"{_ratio(median_qpm(ws, front, mode, hi), median_qpm(ws, front, mode, lo))} |")
    for front, why in (result.get("broken") or {}).items():
        out += ["", f"**{front} did not run**: {why}"]
    dpp_rows = [w for w in ws if w["dpp"].get("reports") and not w["profiled"]]
    if dpp_rows:
        out += ["", "dpp's reports per window (mean phases, s):", "",
                "| front end | N | reports | pruned | kept (avg) | analysis | submit | build "
                "| wait | enumeration | filter outcomes |",
                "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
        for w in dpp_rows:
            d = w["dpp"]
            ph = d.get("phases_avg_s") or {}
            out.append(f"| {w['front']} | {w['clients']} | {d['reports']} | "
                       f"{d['tables_pruned']} | {d.get('partitions_kept_avg') or '—'} | "
                       + " | ".join(f"{ph.get(k, 0.0):.3f}" for k in
                                    ("analysis", "submit", "build", "wait",
                                     "split_enumeration"))
                       + f" | {d.get('filter_outcomes')} |")
    out += _thread_table([w for w in ws if not w["profiled"]])
    prof = [w for w in ws if w["profiled"]]
    if prof:
        out += ["", "## Profiled windows (unmeasured; samplers running)", ""]
        for w in prof:
            out.append(f"### {w['front']} / {w['mode']} / N={w['clients']}: {w['qpm']:.1f} "
                       f"q/min, {w['correct']} right, {w['wrong']} wrong, {w['failed']} "
                       f"failed; cores {w['cpu_cores']}")
            out.append("")
            py = w["profile"].get("PySampler")
            if py:
                out.append(f"Python threads ({py['samples']} samples every "
                           f"{py['interval_s'] * 1000:g} ms; sampler lag median "
                           f"{py['sampler_lag_ms']['median']} ms, p90 "
                           f"{py['sampler_lag_ms']['p90']} ms; threads 'running Python' per "
                           f"sample: {py['running_threads_hist']}; hook callbacks in flight: "
                           f"{py['hook_threads_hist']}); CPU (cores) by thread role: "
                           f"{py.get('cpu_cores_by_role')}:")
                out.append("")
                out.append("| role | state | threads (avg) |")
                out.append("| --- | --- | ---: |")
                out += [f"| {s['role']} | {s['state']} | {s['threads_avg']} |"
                        for s in py["states"]]
                out.append("")
                out.append("| role | state | where (innermost dpp frame, else the pyspark call) "
                           "| threads (avg) |")
                out.append("| --- | --- | --- | ---: |")
                out += [f"| {s['role']} | {s['state']} | `{s['where']}` | {s['threads_avg']} |"
                        for s in py["frames"]]
                out.append("")
            sc = w["profile"].get("SchedulerSampler")
            if sc and sc.get("samples"):
                out.append(f"Spark scheduler ({sc['samples']} samples): active jobs "
                           f"{sc['active_jobs_avg']}, stages {sc['active_stages_avg']}, tasks "
                           f"running {sc['tasks_running_avg']}, tasks waiting for a core "
                           f"{sc['tasks_waiting_avg']}; all cores busy in "
                           f"{100 * sc['share_cores_full']:.0f}% of samples.")
                out.append("")
            jf = w["profile"].get("JfrSampler")
            if jf and not jf.get("failed"):
                waits = jf["monitor_wait_s"]
                out.append(f"Java Flight Recording of the driver JVM ({jf['wall_s']:g} s): time "
                           f"threads spent waiting to enter a monitor (waits of 1 ms or more), "
                           f"summed over threads:")
                out.append("")
                out.append("| monitor | seconds waited | waits | per query (s) |")
                out.append("| --- | ---: | ---: | ---: |")
                q = max(1, w["completed"])
                out += [f"| {c} | {v:.1f} | {jf['monitor_waits'].get(c, 0)} | {v / q:.3f} |"
                        for c, v in waits.items()]
                out += ["", "| monitor | waited from | seconds |", "| --- | --- | ---: |"]
                out += [f"| {x['monitor']} | `{x['caller']}` | {x['seconds']:.1f} |"
                        for x in jf["monitor_wait_by_caller_s"]]
                out += ["", f"Where the JVM's CPU went ({jf['cpu_samples']} samples of running "
                        f"threads every 20 ms):", "", "| place | share |", "| --- | ---: |"]
                out += [f"| {p} | {100 * v:.0f}% |" for p, v in jf["cpu_share"].items()]
                out.append("")
            elif jf:
                out += [f"(Flight recording: {jf['failed']})", ""]
            jv = w["profile"].get("JvmSampler")
            if jv:
                out.append(f"Driver JVM threads ({jv['dumps']} jstack dumps"
                           + (f"; {jv['failed']}" if jv.get("failed") else "") + "):")
                out.append("")
                out.append("| where | threads (avg) | max |")
                out.append("| --- | ---: | ---: |")
                out += [f"| {c} | {v} | {jv['threads_max'].get(c, '')} |"
                        for c, v in jv["threads_avg"].items()]
                if jv["blocked"]:
                    out += ["", "| BLOCKED on | at | threads (avg) |", "| --- | --- | ---: |"]
                    out += [f"| {b['monitor']} | `{b['at']}` | {b['threads_avg']} |"
                            for b in jv["blocked"]]
                if jv["top_frames"]:
                    out += ["", "| category | frame | threads (avg) |", "| --- | --- | ---: |"]
                    out += [f"| {t['category']} | `{t['frame']}` | {t['threads_avg']} |"
                            for t in jv["top_frames"]]
                out.append("")
    return "\n".join(out) + "\n"


def _ints(text: str) -> list[int]:
    try:
        got = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"--clients takes numbers, not {text!r}")
    if not got or any(x < 1 for x in got):
        raise SystemExit(f"--clients takes positive numbers, not {text!r}")
    return got


def _words(text: str, allowed: tuple[str, ...], flag: str) -> list[str]:
    got = [x.strip() for x in text.split(",") if x.strip()]
    if not got or any(x not in allowed for x in got):
        raise SystemExit(f"{flag} takes {', '.join(allowed)}, not {text!r}")
    return got


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m tpcds.concurrency", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="report folder (result.json, report.md)")
    ap.add_argument("--data", default="data/partition-scale",
                    help="where the fact is generated (kept between runs)")
    ap.add_argument("--partitions", type=int, default=1000, help="partitions of the fact")
    ap.add_argument("--keep", type=int, default=30,
                    help="days with pick = 1 (the generator's; 30 shares tpcds partitions' "
                         "data folder)")
    ap.add_argument("--seconds", type=float, default=60.0, help="measured window per cell")
    ap.add_argument("--clients", default="1,4,16", help="comma list of client counts")
    ap.add_argument("--fronts", default="classic,connect", help="classic, connect")
    ap.add_argument("--modes", default="spark,dpp", help="spark, dpp")
    ap.add_argument("--kind", choices=KINDS, default="catalog",
                    help="the fact as an external catalog table, or (classic only) a dpp "
                         "declared table (register_table; Spark's mode: spark.read.parquet)")
    ap.add_argument("--profile-seconds", type=float, default=0.0,
                    help="add one sampled, unmeasured window of this many seconds per mode at "
                         "the largest client count (Python frames, jstack, Spark's scheduler)")
    ap.add_argument("--warm-up-seconds", type=float, default=30.0,
                    help="unmeasured run per mode before the windows (JIT warm-up)")
    ap.add_argument("--driver-memory", default="2g", help="driver memory of each driver")
    ap.add_argument("--rounds", type=int, default=1,
                    help="measure every cell this many times, the modes' order swapped each "
                         "round; ratios are of the medians")
    ap.add_argument("--conf", action="append", default=[],
                    help="extra Spark conf key=value of the classic session")
    ap.add_argument("-v", "--verbose", action="store_true")
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    fronts = _words(args.fronts, FRONTS, "--fronts")
    if args.kind == "declared" and "connect" in fronts:
        raise SystemExit("--kind declared is for --fronts classic only")
    cfg = Config(data=Path(args.data), out=Path(args.out), partitions=args.partitions,
                 keep=args.keep, seconds=args.seconds, clients=sorted(set(_ints(args.clients))),
                 fronts=fronts, modes=_words(args.modes, MODES, "--modes"), kind=args.kind,
                 profile_seconds=args.profile_seconds, conf=list(args.conf),
                 warm_up_seconds=args.warm_up_seconds,
                 driver_memory=args.driver_memory, rounds=args.rounds)
    if cfg.rounds < 1:
        raise SystemExit(f"--rounds must be at least 1, got {cfg.rounds}")
    existing = cfg.data / f"p{cfg.partitions}" / MANIFEST
    if existing.is_file() and json.loads(existing.read_text()).get("keep") != cfg.keep:
        raise SystemExit(f"{existing.parent} was generated with another --keep; it would be "
                         f"regenerated in place: use another --data")
    cfg.out.mkdir(parents=True, exist_ok=True)

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    result = run(cfg, say)
    (cfg.out / "result.json").write_text(json.dumps(result, indent=1))
    md = render_markdown(result)
    (cfg.out / "report.md").write_text(md)
    print(md)
    print(f"written: {cfg.out / 'result.json'}, {cfg.out / 'report.md'}")
    bad = [w for w in result["windows"] if w["wrong"] or w["failed"]]
    return 1 if bad or result.get("broken") else 0


if __name__ == "__main__":
    raise SystemExit(main())
