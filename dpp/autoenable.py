"""dpp without a code line: ``dpp-submit`` and ``dpp run`` switch it on for a job as it is.

Both start the job with the folder ``dpp/_autoenable`` first on ``PYTHONPATH`` and
``DPP_AUTOENABLE=1`` in its environment. That folder holds a ``sitecustomize`` module, which
Python imports at start-up: it runs the ``sitecustomize`` it hides (the next one on
``sys.path``, if any) and then registers an import hook — nothing else, and it imports no
pyspark. Only when the job imports ``pyspark.sql.session`` is
``SparkSession.Builder.getOrCreate`` wrapped, and only a session the job gets from it is passed
to :func:`dpp.enable` (which reads ``spark.dpp.*`` from the job's conf; ``spark.dpp.enabled``
is true unless set otherwise). A process that creates no session (an executor's Python worker,
a helper script) is untouched. A job that calls ``dpp.enable`` itself gets the same
DppSession (``enable`` is idempotent).

``dpp-submit`` takes ``spark-submit``'s arguments: it runs the ``spark-submit`` of
``$SPARK_HOME`` if set, else the one installed beside this Python (pyspark's), with that
environment; the driver's Python is this one unless ``PYSPARK_DRIVER_PYTHON`` or
``PYSPARK_PYTHON`` says otherwise (it must have this package). ``spark-submit`` passes
``PYTHONPATH`` on to the driver (after pyspark's own zips). ``dpp run -- <command>`` runs any
command (``python job.py``, ``pytest``) the same way.

If enabling fails with an error the user must fix (a bad ``spark.dpp.*`` value, a declared
table that is not a Hive-partitioned folder) the job fails with it, as with ``dpp.enable`` in
the code; any other failure is logged as a warning and the job runs without dpp.
"""
from __future__ import annotations

import logging
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

__all__ = ["SITE_DIR", "ENV_FLAG", "environment", "on_session", "spark_submit", "submit_main",
           "run_main"]

SITE_DIR = Path(__file__).resolve().parent / "_autoenable"
ENV_FLAG = "DPP_AUTOENABLE"
# a job switched on without a code line shows what dpp did: a line per query on stderr
CONSOLE_KEY = "spark.dpp.report.console"

log = logging.getLogger("dpp.autoenable")


def environment(base: Optional[Mapping[str, str]] = None,
                conf: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with the start-up hook: ``SITE_DIR``
    first on ``PYTHONPATH``, ``DPP_AUTOENABLE=1``, the driver's Python set to this one when
    neither ``PYSPARK_DRIVER_PYTHON`` nor ``PYSPARK_PYTHON`` is, and ``conf`` (``dpp run
    --conf``) as ``DPP_CONF`` for the sessions' builders."""
    env = dict(os.environ if base is None else base)
    if conf:
        import json

        env["DPP_CONF"] = json.dumps(dict(conf))
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(SITE_DIR)]
    env["PYTHONPATH"] = os.pathsep.join([str(SITE_DIR), *paths])
    env[ENV_FLAG] = "1"
    if not env.get("PYSPARK_DRIVER_PYTHON") and not env.get("PYSPARK_PYTHON"):
        env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    return env


def on_session(spark: Any) -> None:
    """Called with every session ``getOrCreate`` returns in an auto-enabled process."""
    try:
        import dpp
        from dpp.core.errors import ConfigError, LayoutError
    except Exception as exc:  # this Python lacks the package or a dependency of it
        print(f"dpp: not enabled, this Python ({sys.executable}) cannot import dpp: "
              f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return
    if dpp.session_of(spark) is not None:
        return
    try:
        if spark.conf.get(CONSOLE_KEY, None) is None:   # the job's own setting wins
            spark.conf.set(CONSOLE_KEY, "true")
        dpp.enable(spark)
    except (ConfigError, LayoutError):
        raise
    except Exception as exc:
        log.warning("dpp: not enabled on this session (%s: %s); the job runs without it",
                    type(exc).__name__, exc)


def spark_submit(env: Optional[Mapping[str, str]] = None) -> str:
    """The ``spark-submit`` to run: ``$SPARK_HOME/bin/spark-submit`` when ``SPARK_HOME`` is set,
    else the one beside this Python (pip's pyspark), else pyspark's own, else ``PATH``'s."""
    env = os.environ if env is None else env
    home = env.get("SPARK_HOME")
    candidates = [Path(home) / "bin" / "spark-submit"] if home else []
    candidates.append(Path(sys.executable).parent / "spark-submit")
    try:
        import importlib.util

        spec = importlib.util.find_spec("pyspark")
        if spec is not None and spec.origin:
            candidates.append(Path(spec.origin).parent / "bin" / "spark-submit")
    except (ImportError, ValueError):
        pass
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    found = shutil.which("spark-submit")
    if found:
        return found
    raise SystemExit("dpp-submit: no spark-submit found (set SPARK_HOME, or install pyspark "
                     "beside this Python)")


def submit_main(argv: Optional[Sequence[str]] = None) -> int:
    """``dpp-submit``: ``spark-submit`` with dpp switched on for the sessions the job makes."""
    args = list(sys.argv[1:] if argv is None else argv)
    env = environment()
    exe = spark_submit(env)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(exe, [exe, *args], env)
    return 0  # pragma: no cover - execve does not return


def parse_conf(pairs: Sequence[str], prog: str = "dpp run") -> dict[str, str]:
    """``KEY=VALUE`` strings (``dpp run --conf``) as a dict; a pair without ``=`` is an
    error naming it."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"{prog}: --conf {pair!r}: expected KEY=VALUE")
        out[key.strip()] = value
    return out


def run_main(command: Sequence[str], conf: Optional[Mapping[str, str]] = None) -> int:
    """``dpp run [--conf KEY=VALUE]... -- <command>``: runs ``command`` with dpp switched on
    for the sessions it makes (``conf`` set on their builders where the job sets nothing);
    returns its exit code."""
    command = list(command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print("dpp run: give the command to run, e.g. dpp run -- python job.py",
              file=sys.stderr)
        return 2
    import subprocess

    return subprocess.call(command, env=environment(conf=conf))


def main(argv: Optional[Sequence[str]] = None) -> int:  # pragma: no cover - python -m
    return submit_main(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
