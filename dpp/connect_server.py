"""``dpp connect-server``: a Spark Connect server whose driver prunes every session it serves.

Spark Connect's service runs inside a classic driver (Spark's ``SparkConnectPlugin``); each
client session is a classic session of that driver, made by the service. They share the root
session's optimizer extensions, so the rule :func:`dpp.enable` injects runs for them too, and
the hook is installed driver-wide (``DppHook.installServer``): a session with no bridge of its
own is answered by the root's, by that session's own settings (:mod:`dpp.frontends.hook.sessions`). A
client needs nothing: no dpp import, no setting. ``spark.dpp.connectServer=true`` is set on
the server so a client that does call ``dpp.enable`` sees the server prunes and keeps its own
client-side analysis off.

Usage::

    dpp connect-server --port 15002 [--host 0.0.0.0] [--master local[*]] [--conf K=V]...
    python -m dpp.connect_server --port 15002 ...

In the foreground; prints one ``ready`` line once the port accepts connections; SIGTERM or
Ctrl-C stops Spark and exits 0 (the driver JVM ends with this process). ``--conf
spark.dpp.tables.NAME=FOLDER`` declares a path table every session reads as
``global_temp.NAME`` (Spark's global temporary views are the one kind of name every session
of a driver sees).
"""
from __future__ import annotations

import argparse
import glob
import logging
import os
import signal
import socket
import sys
import threading
import time
from typing import Any, Optional, Sequence

from dpp.runtime.config import CONNECT_SERVER_KEY, PREFIX, DppConfig, table_settings
from dpp.core.errors import ConfigError, DppError

__all__ = ["main", "serve", "ConnectServerError"]

log = logging.getLogger(__name__)

PLUGIN = "org.apache.spark.sql.connect.SparkConnectPlugin"
DEFAULT_PORT = 15002
_READY_TIMEOUT = 120.0


class ConnectServerError(DppError):
    """The server cannot start as asked (a bad setting, no Connect jar, no hook)."""


def _settings(pairs: Sequence[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` entries, checked: dpp's own values are validated before Spark
    starts, so a typo is an error naming the key, not a server that silently prunes nothing."""
    out: dict[str, str] = {}
    for kv in pairs:
        key, sep, value = kv.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--conf {kv!r}: expected KEY=VALUE")
        out[key] = value
    dpp_conf = {k: v for k, v in out.items() if k.startswith(PREFIX)}
    DppConfig.from_mapping(dpp_conf)
    table_settings(dpp_conf)
    if dpp_conf.get("spark.dpp.enabled", "true").strip().lower() == "false":
        log.warning("dpp connect-server: spark.dpp.enabled=false on the server: sessions prune "
                    "only when they set it to true themselves")
    return out


def _connect_jar_present(conf: dict[str, str]) -> bool:
    """Whether Spark's Connect server classes can be on the driver's class path: pyspark ships
    them in its jars folder from 4.0 on; on 3.5 they come with ``spark.jars.packages``."""
    import pyspark

    homes = [os.path.join(os.path.dirname(pyspark.__file__), "jars")]
    if os.environ.get("SPARK_HOME"):
        homes.append(os.path.join(os.environ["SPARK_HOME"], "jars"))
    if any(glob.glob(os.path.join(h, "spark-connect_*.jar")) for h in homes):
        return True
    extra = conf.get("spark.jars.packages", "") + "," + conf.get("spark.jars", "")
    return "spark-connect" in extra


def _wait_ready(host: str, port: int, timeout: float) -> None:
    probe = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((probe, port), timeout=1.0):
                return
        except OSError:
            time.sleep(0.2)
    raise ConnectServerError(f"Spark Connect did not accept connections on {probe}:{port} "
                             f"within {timeout:g} s (is the port taken? see the driver log)")


def start(port: int, master: Optional[str] = None, conf: Optional[dict[str, str]] = None,
          host: Optional[str] = None) -> Any:
    """Starts the driver with Spark Connect and dpp's hook serving every session; returns the
    root SparkSession once the port accepts connections."""
    from pyspark.sql import SparkSession

    conf = dict(conf or {})
    if not _connect_jar_present(conf):
        import pyspark

        raise ConnectServerError(
            f"Spark Connect's server jar (spark-connect_*.jar) is not in pyspark {pyspark.__version__}'s "
            f"jars folder nor in $SPARK_HOME/jars: add it with --conf spark.jars.packages="
            f"org.apache.spark:spark-connect_<scala>:<spark version>")
    plugins = [p for p in conf.pop("spark.plugins", "").split(",")
               if p.strip() and p.strip() != PLUGIN]
    builder = SparkSession.builder.appName(conf.pop("spark.app.name", "dpp-connect-server"))
    if master:
        builder = builder.master(master)
    elif "spark.master" not in conf and not os.environ.get("MASTER"):
        builder = builder.master("local[*]")
    for k, v in conf.items():
        builder = builder.config(k, v)
    if plugins:
        builder = builder.config("spark.plugins", ",".join(plugins))
    builder = builder.config("spark.connect.grpc.binding.port", str(port)) \
        .config(CONNECT_SERVER_KEY, "true")
    if host:
        builder = builder.config("spark.connect.grpc.binding.address", host)
    spark = builder.getOrCreate()
    try:
        _install(spark)
        # the service starts once the hook serves every session: no client is ever served
        # without it (Spark's plugin would open the port while the driver starts)
        service = _service(spark)
        service.start(spark.sparkContext._jsc.sc())
        _wait_ready(host or "", port, _READY_TIMEOUT)
    except BaseException:
        stop(spark)
        raise
    return spark


def _service(spark: Any) -> Any:
    from py4j.java_gateway import JavaClass

    found = spark._jvm.org.apache.spark.sql.connect.service.SparkConnectService
    if not isinstance(found, JavaClass):
        raise ConnectServerError("Spark Connect's server classes are not on the driver's class "
                                 "path (spark-connect_*.jar)")
    return found


def stop(spark: Any) -> None:
    """Stops the Connect service, then Spark."""
    try:
        _service(spark).stop(spark._jvm.scala.Option.empty(), spark._jvm.scala.Option.empty())
    except Exception:   # already stopped, or another Spark's signature: Spark stops it too
        log.debug("stopping the Connect service", exc_info=True)
    spark.stop()


def _install(spark: Any) -> None:
    """dpp on the root session, its hook serving every session, declared tables global."""
    import dpp
    from hive_splits.spark_io import folder_sql, folder_uri

    session = dpp.enable(spark)
    hook = session.optimizer_hook
    if hook is None:
        raise ConnectServerError(f"dpp's optimizer hook is not available in this driver, so "
                                 f"the server could not prune: {session.hook_note}")
    hook.serve_all()
    for name, table in sorted(session.catalog.declared().items()):
        text = f"SELECT * FROM {folder_sql(table)}"
        spark.sql(f"CREATE OR REPLACE GLOBAL TEMP VIEW `{name.replace('`', '``')}` AS {text}")
        # Spark fixes a view's columns and types when it is made; the rule this declares
        # parses the view afresh in each query, so a client reads the folder as its own
        # spark.read.parquet does then (its settings, the folder's schema of that moment)
        # (a folder of many partitions is read through the kept-partition index, as on a
        # classic session; one declared with its types keeps the view's text)
        folder = None if table.given_types else folder_uri(table.location)
        if not spark._jvm.dpp.spark.DppHook.declareView(spark._jsparkSession, name, text,
                                                         folder):
            log.warning("dpp connect-server: Spark %s resolves global_temp.%s as a view whose "
                        "columns and types are fixed now (Spark 4 reads the folder afresh "
                        "per query)", spark.version, name)
        log.info("dpp connect-server: table %s (%s) is global_temp.%s to every session",
                 name, table.location, name)


def serve(port: int, master: Optional[str] = None, conf: Optional[dict[str, str]] = None,
          host: Optional[str] = None, out: Any = None) -> int:
    """Runs the server in the foreground until SIGTERM / SIGINT; returns the exit code."""
    out = out or sys.stdout
    stopping = threading.Event()
    previous = {s: signal.signal(s, lambda *_a: stopping.set())
                for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        spark = start(port, master, conf, host)
        try:
            shown = host if host and host not in ("0.0.0.0", "::") else "localhost"
            print(f"dpp connect-server: ready on sc://{shown}:{port} (Spark {spark.version}, "
                  f"master {spark.sparkContext.master}); SIGTERM or Ctrl-C stops it",
                  file=out, flush=True)
            while not stopping.wait(0.5):
                pass
        finally:
            print("dpp connect-server: stopping", file=out, flush=True)
            stop(spark)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    return 0


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--port", type=int, default=DEFAULT_PORT,
                    help=f"the gRPC port clients connect to (default {DEFAULT_PORT})")
    ap.add_argument("--host", default=None,
                    help="the address to listen on (default: Spark's, every interface)")
    ap.add_argument("--master", default=None, help="Spark master (default local[*])")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark setting of the server, spark.dpp.* included (repeatable)")


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        return serve(args.port, args.master, _settings(args.conf), args.host)
    except DppError as exc:
        print(f"dpp connect-server: error: {exc}", file=sys.stderr)
        return 2


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="dpp connect-server",
                                 description="a Spark Connect server that prunes every session")
    add_arguments(ap)
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
