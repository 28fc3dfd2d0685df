"""Java sources of this project compiled into a cached jar with the JDK's ``javac``.

The counting filesystem here is compiled on first use against the jars of the installed
pyspark; so is the optimizer hook (``dpp/jvm``) for a Spark none of the package's prebuilt
jars fits (see :mod:`dpp.runtime.jvm_build`). Jars go into ``~/.cache/dpp-spark`` (or
``$XDG_CACHE_HOME``), under a name keyed by the sources, the class path and the ``javac``
arguments, so an upgrade of any builds a new jar.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional, Sequence

__all__ = ["cached_jar", "spark_jars"]


def spark_jars(pattern: str) -> list[str]:
    """Spark's jars matching ``pattern`` (e.g. ``spark-sql_*.jar``), sorted. Looked for where
    pyspark may live: the pip package's own ``jars`` folder; under ``spark-submit`` pyspark is
    imported from ``$SPARK_HOME/python/lib/pyspark.zip`` (no folder beside it), so also
    ``$SPARK_HOME/jars`` and the home pyspark's own finder returns."""
    import glob

    import pyspark

    homes = [os.path.dirname(pyspark.__file__), os.environ.get("SPARK_HOME") or ""]
    try:
        from pyspark.find_spark_home import _find_spark_home

        homes.append(_find_spark_home())
    except Exception:  # pragma: no cover - no home to find: the others are tried
        pass
    for home in homes:
        if home:
            found = sorted(glob.glob(os.path.join(home, "jars", pattern)))
            if found:
                return found
    return []


def cached_jar(prefix: str, sources: Sequence[Path], classpath: str, unavailable: type,
               cache_dir: Optional[str] = None, salt: str = "",
               javac_args: Sequence[str] = ()) -> Path:
    """The jar of ``sources`` compiled against ``classpath``, built once per digest (of the
    sources, the class path, ``salt`` and ``javac_args``, e.g. ``("--release", "8")``).
    Raises ``unavailable`` (an exception class) saying what is missing: no JDK, a compile
    error."""
    digest = hashlib.sha256()
    for src in sources:
        digest.update(src.name.encode() + src.read_bytes())
    digest.update((classpath + salt + " ".join(javac_args)).encode())
    base = Path(cache_dir or os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    jar = base / "dpp-spark" / f"{prefix}-{digest.hexdigest()[:16]}.jar"
    if jar.exists():
        return jar
    javac, jar_tool = shutil.which("javac"), shutil.which("jar")
    if javac is None or jar_tool is None:
        raise unavailable(f"javac and jar (a JDK 17+) are needed to build {prefix}; install "
                          f"a JDK (Debian: openjdk-17-jdk-headless)")
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([javac, "-nowarn", *javac_args, "-cp", classpath, "-d", tmp,
                              *[str(s) for s in sources]], capture_output=True, text=True)
        if out.returncode != 0:
            raise unavailable(f"javac failed on {prefix}: {out.stderr.strip()[:800]}")
        partial = jar.with_suffix(f".{os.getpid()}.tmp")
        out = subprocess.run([jar_tool, "cf", str(partial), "-C", tmp, "."],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise unavailable(f"jar failed on {prefix}: {out.stderr.strip()[:500]}")
        partial.replace(jar)
    return jar
