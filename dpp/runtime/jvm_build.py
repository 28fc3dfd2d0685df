"""The optimizer hook's JVM part: one jar per Spark line, built with the package.

The Java source (``dpp/jvm/src``, one source for every Spark line, plus the line's small shim
in ``dpp/jvm/compat/spark35`` or ``dpp/jvm/compat/spark4``) is compiled by the release step
(``make jars``: ``scripts/build_hook_jars.py``), once per Spark minor line against that line's
own jars, into ``dpp/jvm/jars/dpp-hook-spark<line>_<scala>.jar``, which the source tree keeps
and every install carries (an install compiles nothing); ``jars/manifest.json`` records each
jar's Spark release, Scala version and the digest of the sources it was compiled from.

At run time :func:`hook_jar` takes the jar of the running Spark's line and Scala version. No
JDK is needed for it: a driver with a JRE only gets the hook. Only a Spark no jar matches (a
line this package predates, a Scala 2.13 build of Spark 3.5), or a source tree whose sources
changed since its jars were built, compiles the sources with the JDK's ``javac`` against the
running Spark's jars, cached in ``~/.cache/dpp-spark`` (or ``$XDG_CACHE_HOME``); with neither
a jar nor ``javac`` it raises :class:`HookUnavailable` saying so, and dpp reports that in the
first report.

The jar is loaded into a running driver JVM by adding it to the classloader Spark's driver
already uses for ``--jars`` (``MutableURLClassLoader``): a live session needs no restart and
no ``spark.jars`` setting.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import threading
from pathlib import Path
from typing import Any, Optional

from hive_splits.javac import cached_jar, spark_jars

__all__ = ["HookUnavailable", "SPARK_LINES", "hook_jar", "hook_sources", "load_into",
           "prebuilt_jar"]

_PACKAGE = Path(__file__).parent.parent   # dpp/
_SOURCES = _PACKAGE / "jvm" / "src"
_COMPAT = _PACKAGE / "jvm" / "compat"
JARS = _PACKAGE / "jvm" / "jars"
_LOCK = threading.Lock()
_LOADED: dict[int, Any] = {}   # id(jvm) -> that JVM's py4j view, once the jar is loaded

# The Spark lines a jar is built for: line -> (the pyspark release its jars come from, Scala
# binary version, javac --release). Spark 3.5 runs on Java 8/11/17, 4.x on 17+.
SPARK_LINES: dict[str, tuple[str, str, str]] = {
    "3.5": ("3.5.9", "2.12", "8"),
    "4.0": ("4.0.5", "2.13", "17"),
    "4.1": ("4.1.4", "2.13", "17"),
    "4.2": ("4.2.1", "2.13", "17"),
    "4.3": ("4.3.0", "2.13", "17"),
}


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


def spark_line(spark_version: str) -> str:
    """``"3.5.2"`` -> ``"3.5"`` (a build suffix such as ``4.1.0-SNAPSHOT`` is ignored)."""
    m = re.match(r"(\d+)\.(\d+)", spark_version)
    return f"{m.group(1)}.{m.group(2)}" if m else spark_version


def scala_binary(scala_version: str) -> str:
    """``"2.12.18"`` -> ``"2.12"``."""
    return spark_line(scala_version)


def jar_name(line: str, scala: str) -> str:
    return f"dpp-hook-spark{line}_{scala}.jar"


def compat_line(spark_version: str) -> str:
    """The folder of ``dpp/jvm/compat`` whose shim fits Spark ``spark_version``: ``spark35``
    for 3.x (Scala 2.12 APIs, the classic session in ``org.apache.spark.sql``), ``spark4`` for
    4.x."""
    return "spark35" if spark_version.split(".")[0] == "3" else "spark4"


WIRE_SCHEMA_JAVA = _SOURCES / "dpp" / "spark" / "WireSchema.java"


def wire_schema_java() -> str:
    """``WireSchema.java``: the wire schema (``dpp/analysis/wire_schema.json``) as a Java
    string, so the jar checks the very text Python checks (``WireCheck.java``). Written by
    ``scripts/build_hook_jars.py``; ``tests/test_plan_wire.py`` fails when it is stale."""
    text = json.dumps(json.loads((_PACKAGE / "analysis" / "wire_schema.json").read_text()),
                      separators=(",", ":"), sort_keys=True)
    chunks = [text[i:i + 90] for i in range(0, len(text), 90)]
    body = "\n        + ".join(json.dumps(c) for c in chunks)
    return ("package dpp.spark;\n\n"
            "/** dpp/analysis/wire_schema.json, compact: written by scripts/build_hook_jars.py "
            "(do not edit). */\n"
            "final class WireSchema {\n"
            "    private WireSchema() {\n    }\n\n"
            f"    static final String TEXT = {body};\n"
            "}\n")


def hook_sources(spark_version: str) -> list[Path]:
    """The hook's Java sources for Spark ``spark_version``: ``dpp/jvm/src`` (one source for
    every line) and the line's shim."""
    return sorted(_SOURCES.rglob("*.java")) + sorted(
        (_COMPAT / compat_line(spark_version)).rglob("*.java"))


def sources_digest(spark_version: str) -> str:
    """The digest of the line's sources a prebuilt jar records (names relative to
    ``dpp/jvm``, and contents)."""
    digest = hashlib.sha256()
    base = _SOURCES.parent
    for src in hook_sources(spark_version):
        digest.update(src.relative_to(base).as_posix().encode() + b"\0" + src.read_bytes())
    return digest.hexdigest()


def _manifest() -> dict[str, Any]:
    try:
        return json.loads((JARS / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}


def prebuilt_jar(spark_version: str, scala_version: str) -> tuple[Optional[Path], str]:
    """The package's jar for Spark ``spark_version`` on Scala ``scala_version``, or None and
    why not."""
    line, scala = spark_line(spark_version), scala_binary(scala_version)
    name = jar_name(line, scala)
    entry = _manifest().get(name)
    jar = JARS / name
    if entry is None or not jar.is_file():
        have = ", ".join(sorted(n for n in _manifest() if (JARS / n).is_file())) or "none"
        return None, f"no prebuilt hook jar for Spark {line} (Scala {scala}) (this package has: {have})"
    if _SOURCES.is_dir() and entry.get("sources") != sources_digest(spark_version):
        return None, f"the prebuilt {name} is older than the Java sources beside it"
    return jar, ""


def _scala_of_jars() -> str:
    found = glob.glob(os.path.join(_spark_jars(), "scala-library-*.jar"))
    m = re.search(r"scala-library-(\d+\.\d+)", found[0]) if found else None
    return m.group(1) if m else "unknown"


def hook_jar(cache_dir: Optional[str] = None, spark_version: Optional[str] = None,
             scala_version: Optional[str] = None) -> Path:
    """The hook's jar for the running Spark (``spark_version``/``scala_version``; by default
    the installed pyspark's and its jars'): the package's prebuilt jar of that line, else one
    compiled with ``javac`` on first use. Raises :class:`HookUnavailable` naming what is
    missing."""
    if spark_version is None:
        import pyspark

        spark_version = pyspark.__version__
    if scala_version is None:
        scala_version = _scala_of_jars()
    jar, why = prebuilt_jar(spark_version, scala_version)
    if jar is not None:
        return jar
    try:
        # the bytecode level of the line (Spark 3.x may run on Java 8)
        release = SPARK_LINES.get(spark_line(spark_version),
                                  ("", "", "8" if spark_version.startswith("3.") else "17"))[2]
        return cached_jar("dpp-hook", hook_sources(spark_version),
                          os.path.join(_spark_jars(), "*"), HookUnavailable, cache_dir,
                          salt=spark_version, javac_args=("--release", release))
    except HookUnavailable as exc:
        raise HookUnavailable(f"{why}, and the sources could not be compiled here: {exc}") \
            from None


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
                jar = hook_jar(spark_version=spark.version,
                               scala_version=_jvm_scala(jvm))
                loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
                if loader.getClass().getName() != "org.apache.spark.util.MutableURLClassLoader":
                    raise HookUnavailable(
                        f"the driver's class loader is {loader.getClass().getName()}, not "
                        f"Spark's MutableURLClassLoader: start the job with "
                        f"--driver-class-path {jar}")
                loader.addURL(jvm.java.io.File(str(jar)).toURI().toURL())
                from hive_splits.jvm_refs import forget_misses

                forget_misses(jvm)   # its helpers, looked for before, are there now
            _LOADED[id(jvm)] = jvm
        return jvm.dpp.spark.DppHook


def _jvm_scala(jvm: Any) -> Optional[str]:
    """The Scala version of a driver JVM (``2.13.16``), None when it cannot be asked."""
    try:
        return str(jvm.scala.util.Properties.versionNumberString())
    except Exception:  # pragma: no cover - not a Scala JVM: the jars' version is used
        return None
