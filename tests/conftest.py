"""Shared fixtures: one local Spark session, one real redis-server, Parquet builders.

Spark local mode takes seconds to start, so every test shares the one session; tests must
not change global Spark conf they do not restore (use the ``spark_conf`` helper).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.budget import ALL_VARIANTS

# The Python that runs pytest is the one Spark's workers must use.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks every test that needs the Spark session (directly or through a fixture) as
    ``spark``, every test using a Spark Connect server as ``connect``, and every TPC-DS test
    (DuckDB data generation) as ``tpcds``, so ``make check`` (``-m "not spark and not tpcds
    and not connect and not slow"``) is the quick tier, without a JVM."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        callspec = getattr(item, "callspec", None)
        hadoop = callspec is not None and callspec.params.get("lister_kind") == "hadoop"
        if "spark" in names or "tpcds_sf001" in names or hadoop:
            item.add_marker(pytest.mark.spark)
        if "connect" in names or "connect_server" in names:
            item.add_marker(pytest.mark.connect)   # a Spark Connect server process
        if item.path.name.startswith("test_tpcds"):
            item.add_marker(pytest.mark.tpcds)
    _full_only(config, items)
    _sample_variants(config, items)


def _full_only(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``full`` run under ``make test-all`` only: each takes minutes, and
    ``make test`` must stay under half an hour (their deselection is counted in its summary
    line). A module that imports another's tests names those it runs under ``make test-all``
    only in ``FULL_ONLY`` (a mark on the shared function would mark the other module's too)."""
    if ALL_VARIANTS:
        return

    def full(item: pytest.Item) -> bool:
        named = getattr(getattr(item, "module", None), "FULL_ONLY", ())
        return (item.get_closest_marker("full") is not None
                or getattr(item, "originalname", item.name) in named)

    dropped = [i for i in items if full(i)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [i for i in items if not full(i)]


def _sample_variants(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A module that sets ``SAMPLE_VARIANTS = k`` holds a matrix of variants (job shape × table
    kind × time zone, query × lister...) whose modes are each covered elsewhere too. There every
    case still runs in one of its variants (a case: a value of the parameters the module names
    in ``SAMPLE_CASES``, or each test function when it names none; a function without such a
    parameter runs whole), and about one in ``k`` of the other variants runs besides. A CRC of
    the test id picks them, so every run and checkout samples the same and the sample spreads
    over every parameter. ``DPP_ALL_VARIANTS=1`` (``make test-all``) runs every variant."""
    if ALL_VARIANTS:
        return
    groups: dict[tuple, list[pytest.Item]] = {}
    for item in items:
        module = getattr(item, "module", None)
        callspec = getattr(item, "callspec", None)
        if int(getattr(module, "SAMPLE_VARIANTS", 0) or 0) > 1 and callspec is not None:
            named = getattr(module, "SAMPLE_CASES", None)
            cases = tuple(repr(callspec.params[p]) for p in named or () if p in callspec.params)
            if named and not cases:
                continue   # a function of such a module without a case parameter: all of it
            key = (item.nodeid.split("[")[0], cases)   # relative: the same in every checkout
            groups.setdefault(key, []).append(item)
    dropped: set[int] = set()
    for key, group in groups.items():
        k = int(getattr(group[0].module, "SAMPLE_VARIANTS"))
        chosen = zlib.crc32(repr(key).encode()) % len(group)
        for i, item in enumerate(group):
            if i != chosen and zlib.crc32(item.nodeid.encode()) % k != 0:
                dropped.add(id(item))
    if dropped:
        config.hook.pytest_deselected(items=[i for i in items if id(i) in dropped])
        items[:] = [i for i in items if id(i) not in dropped]


def answer(domain: Any, outcome: str = "complete", reason: str | None = None) -> Any:
    """What a dynamic filter's wait() returns: ``domain`` (a Domain, or None) as the filter's
    one column."""
    from dpp.core.domain import TupleDomain
    from dpp.core.outcomes import WaitResult

    td = None if domain is None else TupleDomain.of({"key": domain})
    return WaitResult(td, outcome, reason)


@contextlib.contextmanager
def spark_conf(spark: Any, settings: Mapping[str, Optional[str]]) -> Iterator[None]:
    """Sets session settings (``None`` unsets) and restores the previous values afterwards."""
    old = {k: spark.conf.get(k, None) for k in settings}
    try:
        for k, v in settings.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
        yield
    finally:
        for k, v in old.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def spark_tmp() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="dpp-spark-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


NIO_CHMOD_SOURCE = Path(__file__).parent / "jvm" / "NioChmodCountingFileSystem.java"
NIO_CHMOD_CLASS = "dpp.tests.NioChmodCountingFileSystem"


def _without_chmod_processes(conf: Mapping[str, str]) -> dict[str, str]:
    """The counting filesystem's settings with ``tests/jvm/NioChmodCountingFileSystem.java``
    as ``file:``: the same counting filesystem, but a new file's permissions are set in the
    JVM rather than by a ``chmod`` child process per file and folder (Hadoop's way without its
    native library: ~40 ms a file on a busy machine, most of the time of every Spark write in
    the suite). Unchanged settings when it cannot be compiled (no JDK)."""
    from hive_splits.javac import cached_jar, spark_jars

    counting = conf.get("spark.driver.extraClassPath")
    hadoop = spark_jars("hadoop-client-api-*.jar")
    if not counting or not hadoop:
        return dict(conf)
    try:
        jar = cached_jar("nio-chmod-fs", [NIO_CHMOD_SOURCE], f"{hadoop[-1]}{os.pathsep}{counting}",
                         RuntimeError)
    except RuntimeError as exc:
        sys.stderr.write(f"conftest: Spark writes fork chmod per file ({exc})\n")
        return dict(conf)
    path = f"{counting}{os.pathsep}{jar}"
    return {**conf, "spark.driver.extraClassPath": path, "spark.executor.extraClassPath": path,
            "spark.hadoop.fs.file.impl": NIO_CHMOD_CLASS}


@pytest.fixture(scope="session")
def spark(spark_tmp: Path):
    """One local[2] SparkSession with Hive support (embedded Derby) for the whole run."""
    from pyspark.sql import SparkSession

    warehouse = spark_tmp / "warehouse"
    metastore = spark_tmp / "metastore_db"
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("dpp-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "4")
        .config("spark.sql.warehouse.dir", str(warehouse))
        # the throughput collector and room to spare: G1 on a 2 GB heap spent five CPU-minutes
        # of an hour's suite collecting, 22 full collections among them (a JVM option of the
        # test session only: nothing dpp does depends on the collector)
        .config("spark.driver.extraJavaOptions",
                f"-Dderby.system.home={spark_tmp} -XX:+UseParallelGC")
        .config("javax.jdo.option.ConnectionURL",
                f"jdbc:derby:;databaseName={metastore};create=true")
        .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                f"jdbc:derby:;databaseName={metastore};create=true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
    )
    try:  # file: counts its LIST/HEAD requests (hive_splits.storage_calls), as object stores do
        from hive_splits.storage_calls import counting_conf

        for k, v in _without_chmod_processes(counting_conf()).items():
            builder = builder.config(k, v)
    except Exception as exc:  # tests that need the counts skip, saying this
        os.environ["DPP_TEST_NO_COUNTING"] = str(exc)
    try:
        builder = builder.enableHiveSupport()
    except Exception:  # pragma: no cover - Hive classes are part of the pyspark wheel
        pass
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


class RedisServer:
    """A real redis-server process on a loopback port, in its own temporary folder."""

    def __init__(self, workdir: Path, port: int | None = None, password: str | None = None,
                 acl_users: Sequence[str] = ()) -> None:
        self.workdir = workdir
        self.port = port or free_port()
        self.password = password
        self.acl_users = list(acl_users)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self) -> "RedisServer":
        exe = shutil.which("redis-server")
        if exe is None:
            pytest.exit("redis-server is not on PATH; run `make test` (scripts/ensure_system.sh "
                        "installs it) or `apt-get install redis-server`", returncode=3)
        self.workdir.mkdir(parents=True, exist_ok=True)
        args = [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.workdir),
                "--save", "", "--appendonly", "no", "--protected-mode", "yes",
                "--notify-keyspace-events", "", "--loglevel", "warning"]
        if self.password:
            args += ["--requirepass", self.password]
        for user in self.acl_users:
            args += ["--user", *user.split()]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"redis-server exited at start: {err}")
            with contextlib.suppress(OSError):
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            time.sleep(0.05)
        raise RuntimeError(f"redis-server did not listen on 127.0.0.1:{self.port} within 10 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def client(self, **kw: Any):
        import redis

        return redis.Redis.from_url(self.url, **kw)


@pytest.fixture(scope="session")
def plain_connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One plain Spark Connect server (no dpp in it) for the modules that only open client
    sessions of their own on it (``tests/connect_server.py``): a server's start is 20-25 s.
    A module that stops its server, or needs server settings, starts its own."""
    from tests.connect_server import serve

    yield from serve(tmp_path_factory, "connect-server")


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """The shared redis-server; tests that stop or restart Redis use ``fresh_redis`` instead."""
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture
def fresh_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of the test's own, free to be killed and restarted."""
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()


@pytest.fixture
def redis_factory(tmp_path: Path):
    """Builds extra redis-servers (with passwords or ACL users); all are stopped at the end."""
    servers: list[RedisServer] = []

    def make(**kw: Any) -> RedisServer:
        s = RedisServer(tmp_path / f"redis{len(servers)}", **kw).start()
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.stop()


# --------------------------------------------------------------------------- Parquet builders

def write_parquet(path: Path, columns: Mapping[str, Sequence[Any]],
                  schema: pa.Schema | None = None) -> Path:
    """Writes one Parquet file from column lists (pyarrow infers types unless given)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.table(dict(columns), schema=schema) if schema is not None else pa.table(dict(columns))
    pq.write_table(table, path)
    return path


def make_partitioned_table(root: Path, partitions: Mapping[tuple[tuple[str, str], ...],
                                                          Mapping[str, Sequence[Any]]],
                           files_per_partition: int = 1,
                           schema: pa.Schema | None = None) -> Path:
    """Writes a Hive-partitioned Parquet table.

    ``partitions`` maps a tuple of (column, folder value) pairs to the data columns of that
    partition, e.g. ``{(("d", "1"),): {"x": [1, 2]}}`` → ``root/d=1/part-00000.parquet``.
    Folder values are written as given (already escaped).
    """
    for spec, cols in partitions.items():
        folder = root.joinpath(*[f"{k}={v}" for k, v in spec])
        n = len(next(iter(cols.values()))) if cols else 0
        chunks = max(1, files_per_partition)
        step = max(1, -(-n // chunks)) if n else 1
        for i in range(chunks):
            part = {k: list(v)[i * step:(i + 1) * step] for k, v in cols.items()}
            write_parquet(folder / f"part-{i:05d}.parquet", part, schema)
    return root


@pytest.fixture
def parquet_builder(tmp_path: Path):
    """``parquet_builder(name, partitions)`` → a partitioned table under the test's tmp_path."""

    def build(name: str, partitions: Mapping[tuple[tuple[str, str], ...], Mapping[str, Sequence[Any]]],
              **kw: Any) -> Path:
        return make_partitioned_table(tmp_path / name, partitions, **kw)

    return build


@pytest.fixture(scope="session")
def tpcds_sf001(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TPC-DS at scale 0.01, generated once per test session (about 10 s) for every module
    that needs real TPC-DS files."""
    from tpcds.generate import generate

    out = tmp_path_factory.mktemp("tpcds") / "sf001"
    generate(0.01, out)
    return out


@pytest.fixture(params=["local", "hadoop"])
def lister_kind(request: pytest.FixtureRequest) -> str:
    """Which lister a parametrized suite runs with: ``local`` (os.scandir) or ``hadoop``
    (Hadoop's FileSystem in the session's JVM, on ``file:`` URIs; needs the Spark session)."""
    return request.param


def make_lister(request: pytest.FixtureRequest, kind: str) -> Any:
    """A fresh lister of ``kind`` (the Hadoop one over the shared test session)."""
    from hive_splits.listing import HadoopLister, LocalLister

    if kind == "hadoop":
        return HadoopLister(request.getfixturevalue("spark"))
    return LocalLister()
