"""The optimizer hook's JVM part (``dpp/jvm/src``), compiled from this package's own source.

The Java sources are compiled once per source digest and pyspark build with the JDK's
``javac`` against pyspark's own jars, into ``~/.cache/dpp-spark`` (or ``$XDG_CACHE_HOME``),
and loaded into a running driver JVM by adding the jar to the classloader Spark's driver
already uses for ``--jars`` (``MutableURLClassLoader``): a live session needs no restart and
no ``spark.jars`` setting.
"""
from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any, Optional

__all__ = ["HookUnavailable", "hook_jar", "load_into"]

_SOURCES = Path(__file__).parent / "jvm" / "src"
_LOCK = threading.Lock()
_LOADED: dict[int, str] = {}   # id(jvm) -> jar loaded into it


class HookUnavailable(RuntimeError):
    """The JVM part cannot be built or loaded (no JDK, another Spark build): dpp then takes
    the SQL-text path, and says so once."""


def _spark_jars() -> str:
    import pyspark

    folder = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    if not glob.glob(os.path.join(folder, "spark-sql_*.jar")):
        raise HookUnavailable(f"pyspark's jars folder {folder} holds no spark-sql jar")
    return folder


def hook_jar(cache_dir: Optional[str] = None) -> Path:
    """The hook's jar, compiled on first use (raises :class:`HookUnavailable` naming what is
    missing)."""
    sources = sorted(_SOURCES.rglob("*.java"))
    jars = _spark_jars()
    digest = hashlib.sha256()
    for src in sources:
        digest.update(src.name.encode() + src.read_bytes())
    digest.update(jars.encode())
    import pyspark
    digest.update(pyspark.__version__.encode())
    base = Path(cache_dir or os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    jar = base / "dpp-spark" / f"dpp-hook-{digest.hexdigest()[:16]}.jar"
    if jar.exists():
        return jar
    javac, jar_tool = shutil.which("javac"), shutil.which("jar")
    if javac is None or jar_tool is None:
        raise HookUnavailable("javac and jar (a JDK 17+) are needed to build dpp's optimizer "
                              "hook; install a JDK (Debian: openjdk-17-jdk-headless)")
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([javac, "-nowarn", "-cp", os.path.join(jars, "*"), "-d", tmp,
                              *[str(s) for s in sources]], capture_output=True, text=True)
        if out.returncode != 0:
            raise HookUnavailable(f"javac failed on dpp/jvm/src: {out.stderr.strip()[:800]}")
        partial = jar.with_suffix(f".{os.getpid()}.tmp")
        out = subprocess.run([jar_tool, "cf", str(partial), "-C", tmp, "."],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise HookUnavailable(f"jar failed: {out.stderr.strip()[:500]}")
        partial.replace(jar)
    return jar


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
            _LOADED[id(jvm)] = "loaded"
        return jvm.dpp.spark.DppHook
