"""The optimizer hook's JVM part per Spark line: the jar a running Spark gets, and what a
driver with neither a matching jar nor ``javac`` is told. No Spark session: the jars are
built here with ``scripts/build_hook_jars.py`` against the installed pyspark's own jars."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from dpp.runtime import jvm_build
from dpp.runtime.jvm_build import HookUnavailable

ROOT = Path(__file__).resolve().parent.parent


def test_one_source_tree_and_a_shim_per_line():
    for version, shim in (("3.5.2", "spark35"), ("4.0.1", "spark4"), ("4.3.0", "spark4")):
        sources = jvm_build.hook_sources(version)
        names = {s.relative_to(ROOT / "dpp" / "jvm").parts[0] for s in sources}
        assert names == {"src", "compat"}
        assert {s.parent.parent.parent.name for s in sources if "compat" in s.parts} == {shim}
        assert {s.name for s in sources if "compat" in s.parts} == {
            "Compat.java", "CollectionConverters.java", "CompatFileIndex.java"}


def test_every_supported_line_has_a_jar_entry():
    assert sorted(jvm_build.SPARK_LINES) == ["3.5", "4.0", "4.1", "4.2", "4.3"]
    assert {jvm_build.spark_line(v) for v, _, _ in jvm_build.SPARK_LINES.values()} == set(
        jvm_build.SPARK_LINES)
    assert jvm_build.SPARK_LINES["3.5"][1:] == ("2.12", "8")


@pytest.mark.parametrize("line", sorted(jvm_build.SPARK_LINES))
def test_the_shipped_jar_of_each_line_matches_its_sources(line: str) -> None:
    """Every install carries these jars (git keeps them, the wheel and sdist include them):
    no install compiles or downloads anything. A Java change must be followed by ``make
    jars``, the release step, or this fails."""
    release, scala, target = jvm_build.SPARK_LINES[line]
    name = jvm_build.jar_name(line, scala)
    manifest = json.loads((jvm_build.JARS / "manifest.json").read_text())
    entry = manifest.get(name)
    assert entry is not None and (jvm_build.JARS / name).is_file(), \
        f"{name} is not shipped in dpp/jvm/jars: run `make jars`"
    assert entry["spark"] == release and entry["release"] == target
    assert entry["sources"] == jvm_build.sources_digest(release), \
        f"{name} is older than the Java sources: run `make jars` and commit dpp/jvm/jars"
    with zipfile.ZipFile(jvm_build.JARS / name) as z:
        assert {"dpp/spark/DppHook.class", "dpp/spark/Compat.class"} <= set(z.namelist())
    assert jvm_build.prebuilt_jar(release, scala + ".0") == (jvm_build.JARS / name, "")


def test_the_package_data_ships_the_jars() -> None:
    """setup.cfg's package data and MANIFEST.in name the jars, so a wheel built from git or
    from the sdist carries them."""
    cfg = (ROOT / "setup.cfg").read_text()
    assert "jvm/jars/*.jar" in cfg and "jvm/jars/manifest.json" in cfg
    manifest_in = (ROOT / "MANIFEST.in").read_text()
    assert "recursive-include dpp/jvm/jars *.jar *.json" in manifest_in
    assert "prune dpp/jvm/jars" not in manifest_in
    assert not (ROOT / "setup.py").exists(), "an install must compile nothing"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The installed pyspark's line built as a wheel would carry it."""
    if shutil.which("javac") is None:
        pytest.skip("no javac to build the jar with")
    import pyspark

    line = jvm_build.spark_line(pyspark.__version__)
    if jvm_build.SPARK_LINES.get(line, ("",))[0] != pyspark.__version__:
        pytest.skip(f"pyspark {pyspark.__version__} is not the release line {line} is built from")
    out = tmp_path_factory.mktemp("jars")
    subprocess.run([sys.executable, str(ROOT / "scripts" / "build_hook_jars.py"),
                    "--out", str(out), "--lines", line], check=True, capture_output=True)
    return out


@pytest.mark.slow   # javac builds a jar (~10 s)
def test_the_running_sparks_line_gets_its_prebuilt_jar_without_javac(built, monkeypatch,
                                                                       tmp_path):
    import pyspark

    manifest = json.loads((built / "manifest.json").read_text())
    (name,) = manifest
    with zipfile.ZipFile(built / name) as z:
        assert "dpp/spark/DppHook.class" in z.namelist()
        assert "dpp/spark/Compat.class" in z.namelist()
    monkeypatch.setattr(jvm_build, "JARS", built)
    monkeypatch.setenv("PATH", str(tmp_path))          # no javac, no jar tool
    scala = manifest[name]["scala"] + ".99"
    assert jvm_build.hook_jar(cache_dir=str(tmp_path), spark_version=pyspark.__version__,
                              scala_version=scala) == built / name


@pytest.mark.slow   # javac builds a jar (~10 s)
def test_no_matching_jar_and_no_javac_says_both(built, monkeypatch, tmp_path):
    monkeypatch.setattr(jvm_build, "JARS", built)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HookUnavailable) as err:
        jvm_build.hook_jar(cache_dir=str(tmp_path), spark_version="3.4.1",
                           scala_version="2.12.17")
    text = str(err.value)
    assert "no prebuilt hook jar for Spark 3.4 (Scala 2.12)" in text
    assert "javac" in text


@pytest.mark.slow   # javac builds a jar (~10 s)
def test_a_jar_older_than_its_sources_is_not_used(built, monkeypatch, tmp_path):
    import pyspark

    manifest = json.loads((built / "manifest.json").read_text())
    (name,) = manifest
    stale = tmp_path / "stale"
    shutil.copytree(built, stale)
    manifest[name]["sources"] = "0" * 64
    (stale / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setattr(jvm_build, "JARS", stale)
    jar, why = jvm_build.prebuilt_jar(pyspark.__version__, manifest[name]["scala"])
    assert jar is None and "older than the Java sources" in why
