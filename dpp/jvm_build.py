"""The optimizer hook's JVM part (``dpp/jvm/src``), compiled from this package's own source.

The Java sources are compiled once per source digest and pyspark build with the JDK's
``javac`` against pyspark's own jars, into ``~/.cache/dpp-spark`` (or ``$XDG_CACHE_HOME``),
and loaded into a running driver JVM by adding the jar to the classloader Spark's driver
already uses for ``--jars`` (``MutableURLClassLoader``): a live session needs no restart and
no ``spark.jars`` setting.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Optional

from hive_splits.javac import cached_jar, spark_jars

__all__ = ["HookUnavailable", "hook_jar", "load_into"]

_SOURCES = Path(__file__).parent / "jvm" / "src"
_COMPAT = Path(__file__).parent / "jvm" / "compat"
_LOCK = threading.Lock()
_LOADED: dict[int, Any] = {}   # id(jvm) -> that JVM's py4j view, once the jar is loaded


class HookUnavailable(RuntimeError):
    """The JVM part cannot be built or loaded (no JDK, another Spark build): dpp then takes
    the SQL-text path, and says so once."""


def _spark_jars() -> str:
    found = spark_jars("spark-sql_*.jar")
    if not found:
        import pyspark

        raise HookUnavailable(f"no spark-sql jar in pyspark's jars folder (beside "
                              f"{pyspark.__file__}) nor in $SPARK_HOME/jars")
    return os.path.dirname(found[0])


def compat_line(spark_version: str) -> str:
    """The folder of ``dpp/jvm/compat`` whose shim fits Spark ``spark_version``: ``spark35``
    for 3.x (Scala 2.12 APIs, the classic session in ``org.apache.spark.sql``), ``spark4`` for
    4.x."""
    return "spark35" if spark_version.split(".")[0] == "3" else "spark4"


def hook_sources(spark_version: str) -> list[Path]:
    """The hook's Java sources for Spark ``spark_version``: ``dpp/jvm/src`` (one source for
    every line) and the line's shim."""
    return sorted(_SOURCES.rglob("*.java")) + sorted(
        (_COMPAT / compat_line(spark_version)).rglob("*.java"))


def hook_jar(cache_dir: Optional[str] = None) -> Path:
    """The hook's jar, compiled on first use (raises :class:`HookUnavailable` naming what is
    missing)."""
    import pyspark

    return cached_jar("dpp-hook", hook_sources(pyspark.__version__),
                      os.path.join(_spark_jars(), "*"), HookUnavailable, cache_dir,
                      salt=pyspark.__version__)


def loaded_hook() -> Any:
    """The ``dpp.spark.DppHook`` class of the driver JVM (one per Python process) if
    :func:`load_into` loaded it, else None (nothing is compiled or loaded here)."""
    from py4j.java_gateway import JavaClass

    with _LOCK:
        for jvm in _LOADED.values():
            found = jvm.dpp.spark.DppHook
            if isinstance(found, JavaClass):
                return found
    return None


def load_into(spark: Any) -> Any:
    """The ``dpp.spark.DppHook`` class in ``spark``'s driver JVM, loading the jar if needed."""
    jvm = spark._jvm
    with _LOCK:
        if id(jvm) not in _LOADED:
            found = jvm.dpp.spark.DppHook
            from py4j.java_gateway import JavaClass

            if not isinstance(found, JavaClass):
                jar = hook_jar()
                loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
                if loader.getClass().getName() != "org.apache.spark.util.MutableURLClassLoader":
                    raise HookUnavailable(
                        f"the driver's class loader is {loader.getClass().getName()}, not "
                        f"Spark's MutableURLClassLoader: start the job with "
                        f"--driver-class-path {jar}")
                loader.addURL(jvm.java.io.File(str(jar)).toURI().toURL())
            _LOADED[id(jvm)] = jvm
        return jvm.dpp.spark.DppHook
