"""Counting the storage requests Spark's own reader makes (LIST and HEAD), on every scheme.

Object stores and HDFS count requests in Hadoop's per-filesystem ``StorageStatistics``
(``op_list_status``, ``op_get_file_status``, ...). Hadoop's local filesystem does not, so on
local data (tests, the TPC-DS bench) a counting subclass of it is installed:
``hive_splits/jvm/CountingLocalFileSystem.java``, compiled once with the JDK's ``javac``
(cached by source hash), put on the driver's class path and registered for ``file:``
(:func:`counting_conf`). Nothing here is needed to prune: it exists to *measure* what an
object store would bill.

The same jar holds ``hive_splits/jvm/LaggedLocalFileSystem.java``, the local disk under a
scheme of its own, ``lagfs:`` (:func:`lag_uri`), with a delay injected into every LIST and
HEAD (:func:`lag_conf`; at runtime ``LaggedLocalFileSystem.setDelays``) and counted with the
others. It lets a benchmark *measure* listing at object-store latency rather than project it
from counts: both Spark's reader (``fs.lagfs.impl``) and dpp's Hadoop lister (any scheme but
``file:``) go through it, as they would through ``s3a:``.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Optional

from hive_splits.javac import cached_jar

__all__ = ["counting_jar", "counting_conf", "storage_calls", "bytes_read", "worth_counting",
           "CountingUnavailable", "lag_conf", "lag_uri", "LAG_SCHEME"]

log = logging.getLogger(__name__)

_SOURCES = [Path(__file__).parent / "jvm" / "CountingLocalFileSystem.java",
            Path(__file__).parent / "jvm" / "CountingInputStream.java",
            Path(__file__).parent / "jvm" / "LaggedLocalFileSystem.java"]
_CLASS = "dpp.hadoop.CountingLocalFileSystem"
_LAG_CLASS = "dpp.hadoop.LaggedLocalFileSystem"
LAG_SCHEME = "lagfs"
# statistics names of the filesystems that count their own requests (S3A, HDFS, ABFS, GCS)
_LIST_STATS = ("op_list_status", "op_list_located_status", "op_list_files", "op_glob_status")
_HEAD_STATS = ("op_get_file_status", "op_exists", "op_is_directory", "op_is_file")


class CountingUnavailable(RuntimeError):
    """The counting filesystem cannot be built here (no JDK, no Hadoop jar)."""


def _classpath() -> str:
    """Hadoop's client API (the filesystem) and Spark's core (a task's job group)."""
    from hive_splits.javac import spark_jars

    found = []
    for pattern in ("hadoop-client-api-*.jar", "spark-core_*.jar"):
        jars = spark_jars(pattern)
        if not jars:
            raise CountingUnavailable(f"Spark's jars folder (pyspark's, $SPARK_HOME's) holds "
                                      f"no {pattern}")
        found.append(jars[-1])
    return os.pathsep.join(found)


def counting_jar(cache_dir: Optional[str] = None) -> Path:
    """The jar of the counting filesystem and of the lagged one (one jar: the lagged one adds
    to the counting one's counts), compiled on first use (needs ``javac`` and ``jar`` from a
    JDK; raises :class:`CountingUnavailable` saying what is missing)."""
    classpath = _classpath()
    return cached_jar("counting-fs", _SOURCES + _vectored(classpath), classpath,
                      CountingUnavailable, cache_dir)


_VECTORED = Path(__file__).parent / "jvm" / "VectoredCountingInputStream.java"


def _vectored(classpath: str) -> list[Path]:
    """The vectored-read counter where the Hadoop jar has vectored reads (``FileRange``,
    Hadoop 3.3.5+: Spark 4.x; Spark 3.5 ships 3.3.4), else nothing: the plain counter counts
    every read such a Hadoop makes."""
    import zipfile

    for jar in classpath.split(os.pathsep):
        if "hadoop-client-api" in os.path.basename(jar):
            try:
                with zipfile.ZipFile(jar) as z:
                    z.getinfo("org/apache/hadoop/fs/FileRange.class")
                return [_VECTORED]
            except (KeyError, OSError, zipfile.BadZipFile):
                return []
    return []


def counting_conf(cache_dir: Optional[str] = None) -> dict[str, str]:
    """Spark settings that make ``file:`` count its requests and register ``lagfs:`` (set
    before the JVM starts). ``lagfs:`` costs nothing unless used, and its delays are 0 unless
    set (:func:`lag_conf`, or ``LaggedLocalFileSystem.setDelays`` at runtime)."""
    jar = str(counting_jar(cache_dir))
    return {"spark.driver.extraClassPath": jar,
            "spark.executor.extraClassPath": jar,
            "spark.hadoop.fs.file.impl": _CLASS,
            f"spark.hadoop.fs.{LAG_SCHEME}.impl": _LAG_CLASS}


def lag_conf(list_ms: float, head_ms: float) -> dict[str, str]:
    """Spark settings giving ``lagfs:`` an object store's latency: ``list_ms`` per LIST (a
    folder listed) and ``head_ms`` per HEAD (one path's status), in milliseconds, fractions
    allowed. Read when Hadoop creates the filesystem (once per JVM: Hadoop caches it), so set
    them with :func:`counting_conf` before the session starts; a running session's delays
    change with ``spark._jvm.dpp.hadoop.LaggedLocalFileSystem.setDelays(list_ms, head_ms)``
    (``clearDelays()`` goes back to these)."""
    out = {}
    for what, ms in (("list", list_ms), ("head", head_ms)):
        ms = float(ms)
        if not ms >= 0 or ms == float("inf"):
            raise ValueError(f"{what} delay must be a finite number of milliseconds >= 0, "
                             f"not {ms!r}")
        out[f"spark.hadoop.fs.{LAG_SCHEME}.{what}.ms"] = repr(ms)
    return out


def lag_uri(local_path: str | os.PathLike[str]) -> str:
    """``local_path`` (``/tmp/x``, a relative path, or a ``file:`` URI) as the ``lagfs:`` URI
    of the same folder or file, ``lagfs:///tmp/x``: what to give ``spark.read`` or dpp so that
    their requests go through the lagged filesystem. The path is kept as spelt (not
    percent-encoded): Hadoop's ``Path`` takes the text after the scheme literally, as it does
    for ``file:``, so a Hive-escaped folder ``k=a%3Ab`` stays that name."""
    text = os.fspath(local_path)
    if text.startswith("file:"):
        text = text[len("file:"):]
        if text.startswith("//"):
            authority, _, rest = text[2:].partition("/")
            if authority not in ("", "localhost"):
                raise ValueError(f"{local_path!r} names a host ({authority!r}), not the local "
                                 f"disk")
            text = "/" + rest
    # POSIX keeps a leading "//" in abspath; Hadoop would read it as an empty authority
    return f"{LAG_SCHEME}:///{os.path.abspath(text).lstrip('/')}"


def storage_calls(spark: Any) -> Optional[tuple[int, int]]:
    """(LIST, HEAD) requests made so far in the driver's JVM, over every filesystem that
    counts them; None when none does (plain local filesystem without the counting one).

    Cheap after the first call (a few py4j calls): the counting class and which statistics
    each filesystem tracks are looked up once per JVM."""
    from py4j.java_gateway import JavaClass

    jvm = spark._jvm
    state = _STATE.setdefault(id(jvm), {"tracked": {}})
    if "counting" not in state:
        found = jvm.dpp.hadoop.CountingLocalFileSystem
        state["counting"] = found if isinstance(found, JavaClass) else None
    total_list = total_head = 0
    known = False
    if state["counting"] is not None:
        counts = state["counting"].counts()
        total_list, total_head = int(counts[0]), int(counts[1])
        known = True
    try:
        if "global" not in state:
            state["global"] = jvm.org.apache.hadoop.fs.FileSystem.getGlobalStorageStatistics()
        it = state["global"].iterator()
        while it.hasNext():
            stats = it.next()
            name = str(stats.getName())
            tracked = state["tracked"].get(name)
            if tracked is None:
                tracked = state["tracked"][name] = (
                    [k for k in _LIST_STATS if stats.isTracked(k)],
                    [k for k in _HEAD_STATS if stats.isTracked(k)])
            for key in tracked[0]:
                total_list += int(stats.getLong(key) or 0)
                known = True
            for key in tracked[1]:
                total_head += int(stats.getLong(key) or 0)
                known = True
    except Exception as exc:  # pragma: no cover - a Hadoop without storage statistics
        log.debug("storage statistics unavailable: %s", exc)
    return (total_list, total_head) if known else None


_STATE: dict[int, dict[str, Any]] = {}


def bytes_read(spark: Any) -> Optional[tuple[int, int, int]]:
    """Bytes read so far in the driver's JVM through the counting filesystems' files: (by
    dpp build-side tasks, by other tasks, outside tasks), or None without them. Unlike
    Spark's task input metric (Hadoop's per-thread statistics) it counts what a vectored
    read fetches on other threads. Local mode only sees every task: executors in other JVMs
    count in theirs."""
    from py4j.java_gateway import JavaClass

    found = spark._jvm.dpp.hadoop.CountingLocalFileSystem
    if not isinstance(found, JavaClass):
        return None
    try:
        got = found.bytesRead()
    except Exception:   # a jar from before the byte counts
        return None
    return int(got[0]), int(got[1]), int(got[2])


def worth_counting(spark: Any, location: str) -> bool:
    """Whether counting a handoff's requests can say anything (and so is worth its ~20 ms):
    the counting filesystem is installed, or the location is on a filesystem that counts its
    own requests (anything but the local disk)."""
    from hive_splits.listing import is_local_location

    if not is_local_location(location):
        return True
    state = _STATE.get(id(spark._jvm))
    if state is None or "counting" not in state:
        storage_calls(spark)
        state = _STATE[id(spark._jvm)]
    return state["counting"] is not None
