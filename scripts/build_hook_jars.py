#!/usr/bin/env python3
"""Build the optimizer hook's jars, one per Spark line (``dpp.runtime.jvm_build.SPARK_LINES``).

Each line's jar is compiled from ``dpp/jvm/src`` plus the line's shim (``dpp/jvm/compat``)
with ``javac --release <8|17>`` against that line's own Spark jars. The jars come from the
pyspark source distribution of the line's release (it carries Spark's jars), fetched once with
``pip download pyspark==X --no-deps --no-binary :all:`` into a cache and unpacked there; an
installed pyspark of exactly that release is used instead when present.

Needs at build time: a JDK 17+ (``javac``) and access to PyPI (or a filled cache). The cache is
``$DPP_SPARK_BUILD_CACHE``, else ``~/.cache/dpp-spark/build`` (or under ``$XDG_CACHE_HOME``):
about 2 GB of source distributions, and their jars unpacked.

    python scripts/build_hook_jars.py --out dpp/jvm/jars            # every line
    python scripts/build_hook_jars.py --out dpp/jvm/jars --lines 3.5,4.3

It is the release step (``make jars``): the jars go into the source tree (``dpp/jvm/jars``),
which git keeps and every install carries; ``tests/test_jvm_jars.py`` fails while one is
older than the Java sources.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dpp.runtime.jvm_build import (SPARK_LINES, WIRE_SCHEMA_JAVA, hook_sources,  # noqa: E402
                                   jar_name, sources_digest, wire_schema_java)


def cache_dir() -> Path:
    base = os.environ.get("DPP_SPARK_BUILD_CACHE")
    if base:
        return Path(base)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dpp-spark" / "build"


def installed_jars(release: str) -> str | None:
    """The jars folder of an installed pyspark of exactly ``release``, if any."""
    try:
        import pyspark
    except ImportError:
        return None
    folder = Path(pyspark.__file__).parent / "jars"
    if pyspark.__version__ == release and glob.glob(str(folder / "spark-sql_*.jar")):
        return str(folder)
    return None


def spark_jars(release: str, cache: Path) -> str:
    """A folder holding Spark ``release``'s jars: the installed pyspark's, or unpacked from
    its source distribution (downloaded once)."""
    found = installed_jars(release)
    if found:
        return found
    folder = cache / f"pyspark-{release}" / "jars"
    if glob.glob(str(folder / "spark-sql_*.jar")):
        return str(folder)
    sdists = cache / "sdists"
    sdists.mkdir(parents=True, exist_ok=True)
    archive = sdists / f"pyspark-{release}.tar.gz"
    if not archive.exists():
        print(f"build_hook_jars: downloading pyspark {release} (its Spark jars)", flush=True)
        download(release, sdists)
    unpacking = folder.with_name("jars.partial")
    shutil.rmtree(unpacking, ignore_errors=True)
    unpacking.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            if (len(parts) == 4 and parts[1:3] == ["deps", "jars"]
                    and parts[3].endswith(".jar") and member.isfile()):
                src = tar.extractfile(member)
                assert src is not None
                with open(unpacking / parts[3], "wb") as out:
                    shutil.copyfileobj(src, out)
    if not glob.glob(str(unpacking / "spark-sql_*.jar")):
        raise SystemExit(f"build_hook_jars: no Spark jars in {archive}")
    shutil.rmtree(folder, ignore_errors=True)
    unpacking.rename(folder)
    return str(folder)


def _pip() -> list[str] | None:
    """A pip to download with: this Python's, else one on PATH (an isolated build environment
    may have none)."""
    if subprocess.run([sys.executable, "-m", "pip", "--version"],
                      capture_output=True).returncode == 0:
        return [sys.executable, "-m", "pip"]
    found = shutil.which("pip3") or shutil.which("pip")
    return [found] if found else None


def download(release: str, folder: Path) -> None:
    """pyspark ``release``'s source distribution into ``folder``: with pip (its index settings
    apply), else from PyPI's JSON API, its SHA-256 checked."""
    pip = _pip()
    if pip is not None:
        subprocess.run([*pip, "download", "-q", "--no-deps", "--no-binary", ":all:",
                        f"pyspark=={release}", "-d", str(folder)], check=True)
        return
    import hashlib
    import urllib.request

    with urllib.request.urlopen(f"https://pypi.org/pypi/pyspark/{release}/json") as r:
        meta = json.load(r)
    (sdist,) = [u for u in meta["urls"] if u["packagetype"] == "sdist"]
    partial = folder / (sdist["filename"] + ".partial")
    digest = hashlib.sha256()
    with urllib.request.urlopen(sdist["url"]) as r, open(partial, "wb") as out:
        for chunk in iter(lambda: r.read(1 << 20), b""):
            digest.update(chunk)
            out.write(chunk)
    if digest.hexdigest() != sdist["digests"]["sha256"]:
        partial.unlink()
        raise SystemExit(f"build_hook_jars: {sdist['filename']}: SHA-256 mismatch")
    partial.replace(folder / f"pyspark-{release}.tar.gz")


def write_jar(classes: Path, jar: Path, line: str, release: str) -> None:
    """A jar of ``classes`` with a manifest; entries in a fixed order, fixed timestamps."""
    partial = jar.with_suffix(".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
        manifest = (f"Manifest-Version: 1.0\r\nCreated-By: dpp-spark build_hook_jars\r\n"
                    f"Implementation-Title: dpp-spark optimizer hook for Spark {line}\r\n"
                    f"Implementation-Version: {release}\r\n\r\n")
        z.writestr(zipfile.ZipInfo("META-INF/MANIFEST.MF", (1980, 1, 1, 0, 0, 0)), manifest)
        for f in sorted(classes.rglob("*.class")):
            info = zipfile.ZipInfo(f.relative_to(classes).as_posix(), (1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, f.read_bytes())
    partial.replace(jar)


def build(out: Path, lines: list[str]) -> dict[str, dict[str, str]]:
    javac = shutil.which("javac")
    if javac is None:
        raise SystemExit("build_hook_jars: javac (a JDK 17+) is needed to build the hook's jars")
    cache = cache_dir()
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        manifest = {}
    for line in lines:
        release, scala, target = SPARK_LINES[line]
        jars = spark_jars(release, cache)
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [javac, "-nowarn", "--release", target, "-encoding", "UTF-8",
                   "-cp", os.path.join(jars, "*"), "-d", tmp,
                   *[str(s) for s in hook_sources(release)]]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"build_hook_jars: javac failed for Spark {line} "
                                 f"({release}):\n{done.stderr}")
            name = jar_name(line, scala)
            write_jar(Path(tmp), out / name, line, release)
        manifest[name] = {"line": line, "spark": release, "scala": scala, "release": target,
                          "sources": sources_digest(release)}
        print(f"build_hook_jars: {name} ({(out / name).stat().st_size} bytes) from Spark "
              f"{release}, javac --release {target}", flush=True)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "dpp" / "jvm" / "jars")
    ap.add_argument("--lines", default=",".join(SPARK_LINES),
                    help="comma-separated Spark lines (default: all of %(default)s)")
    args = ap.parse_args(argv)
    lines = [x.strip() for x in args.lines.split(",") if x.strip()]
    unknown = [x for x in lines if x not in SPARK_LINES]
    if unknown:
        ap.error(f"unknown Spark line(s) {unknown}; known: {list(SPARK_LINES)}")
    current = WIRE_SCHEMA_JAVA.read_text() if WIRE_SCHEMA_JAVA.exists() else ""
    if current != wire_schema_java():
        WIRE_SCHEMA_JAVA.write_text(wire_schema_java())
        print(f"build_hook_jars: wrote {WIRE_SCHEMA_JAVA.name} from wire_schema.json", flush=True)
    build(args.out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
