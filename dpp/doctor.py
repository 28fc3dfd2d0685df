"""``dpp doctor``: what dpp would run with here, and what stops it.

A user whose job does not prune asks first whether dpp is even in the picture: which Spark
and Scala line runs, which hook jar fits it (or why none does), whether a session started here
gets the optimizer hook, whether the coordinator answers, and which ``spark.dpp.*`` settings
are in effect. Each check prints one line; a failed check is named on the last line and the
exit code is 1. The session it starts is a local one (``--master`` changes it) with the
``--conf`` settings, as ``dpp run --conf`` would set a job's.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from dataclasses import fields
from typing import Any, Callable, Optional

__all__ = ["add_arguments", "run"]


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting for the session doctor starts (repeatable)")
    ap.add_argument("--master", default="local[1]",
                    help="the master of the session doctor starts (default: %(default)s)")


class _Doctor:
    def __init__(self, out: Callable[[str], None]) -> None:
        self.out = out
        self.problems: list[str] = []

    def line(self, what: str, text: str) -> None:
        self.out(f"{what + ':':<14} {text}")

    def problem(self, what: str, text: str) -> None:
        self.line(what, "PROBLEM: " + text)
        self.problems.append(f"{what}: {text}")


def _java_version() -> Optional[str]:
    java = shutil.which("java")
    if java is None:
        return None
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    first = (done.stderr or done.stdout).strip().splitlines()
    return f"{first[0]} ({java})" if first else java


def _check_jar(d: _Doctor) -> None:
    import pyspark

    from dpp.runtime import jvm_build

    version = pyspark.__version__
    scala = jvm_build._scala_of_jars()
    d.line("pyspark", f"{version} ({pyspark.__file__.rsplit('/', 1)[0]})")
    d.line("spark line", f"{jvm_build.spark_line(version)}, Scala {scala}")
    jar, why = jvm_build.prebuilt_jar(version, scala)
    if jar is not None:
        d.line("hook jar", f"{jar.name} (shipped, {jar})")
    elif shutil.which("javac"):
        d.line("hook jar", f"{why}; javac will compile the sources on first use")
    else:
        d.problem("hook jar", f"{why}, and no javac to compile the sources: only spark.sql "
                              f"queries are pruned (SQL-text analysis)")


def _check_session(d: _Doctor, master: str, conf: dict[str, str]) -> Any:
    from pyspark.sql import SparkSession

    import dpp
    from dpp.runtime.config import DppConfig, spark_settings
    from dpp.core.errors import DppError

    builder = SparkSession.builder.master(master).appName("dpp-doctor") \
        .config("spark.ui.enabled", "false")
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    try:
        session = dpp.enable(spark)
    except DppError as exc:
        d.problem("settings", str(exc))
        return spark
    if session.optimizer_hook is not None:
        d.line("hook", "active: every DataFrame and SQL query of the session is planned by it")
    else:
        d.problem("hook", f"not active: {session.hook_note or 'spark.dpp.optimizerHook=false'}")
    settings = spark_settings(spark)
    cfg = DppConfig.from_mapping(settings)
    if not cfg.enabled:
        d.problem("enabled", "spark.dpp.enabled=false: dpp does nothing in this session")
    ours = {k: v for k, v in sorted(settings.items()) if k.startswith("spark.dpp.")}
    d.line("settings", ", ".join(f"{k}={v}" for k, v in ours.items()) or
           "none set (every spark.dpp.* at its default)")
    defaults = DppConfig()
    changed = [f"{f.name}={getattr(cfg, f.name)!r}" for f in fields(cfg)
               if getattr(cfg, f.name) != getattr(defaults, f.name)]
    d.line("in effect", ", ".join(changed) or "the defaults")
    _check_coordinator(d, cfg)
    return spark


def _check_coordinator(d: _Doctor, cfg: Any) -> None:
    from dpp.runtime.config import redact_url

    if cfg.coordinator == "embedded":
        d.line("coordinator", "embedded in the driver (nothing to reach)")
        return
    try:
        import redis

        client = redis.Redis.from_url(cfg.coordinator, socket_connect_timeout=3,
                                      socket_timeout=3)
        client.ping()
        d.line("coordinator", f"{redact_url(cfg.coordinator)} answers")
    except Exception as exc:
        d.problem("coordinator", f"{redact_url(cfg.coordinator)} does not answer "
                                 f"({type(exc).__name__}: {exc}): filters cannot be published, "
                                 f"so queries run unpruned")


def run(args: argparse.Namespace, out: Callable[[str], None] = print) -> int:
    """Runs every check; 0 when none found a problem, else 1 with the causes named last."""
    from dpp.autoenable import parse_conf

    d = _Doctor(out)
    d.line("python", f"{sys.version.split()[0]} ({sys.executable})")
    java = _java_version()
    if java is None:
        d.problem("java", "no java on PATH: Spark cannot start")
        return _verdict(d)
    d.line("java", java)
    d.line("javac", shutil.which("javac") or "none (not needed when a shipped jar fits)")
    try:
        import dpp

        d.line("dpp", f"{dpp.__file__.rsplit('/', 2)[0]}")
        _check_jar(d)
    except ImportError as exc:
        d.problem("dpp", f"cannot be imported here: {exc}")
        return _verdict(d)
    spark = None
    try:
        spark = _check_session(d, args.master, parse_conf(args.conf, "dpp doctor"))
    except Exception as exc:
        d.problem("session", f"a Spark session could not start: {type(exc).__name__}: {exc}")
    finally:
        if spark is not None:
            spark.stop()
    return _verdict(d)


def _verdict(d: _Doctor) -> int:
    if d.problems:
        d.out(f"dpp doctor: {len(d.problems)} problem(s): " + "; ".join(d.problems))
        return 1
    d.out("dpp doctor: ok")
    return 0
