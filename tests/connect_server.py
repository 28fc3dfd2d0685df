"""A real local Spark Connect server for tests: ``spark-submit`` with Spark's
``SparkConnectServer`` class (its jar ships in pyspark's ``jars`` folder), on a free loopback
port, in a temporary folder of its own, stopped (its whole process group) at the end."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Optional

import pyspark

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ConnectServer:
    """``start()`` waits until the gRPC port accepts connections; ``stop()`` ends it."""

    def __init__(self, workdir: Path, memory: str = "1g") -> None:
        self.workdir = workdir
        self.memory = memory
        self.port = _free_port()
        self.proc: Optional[subprocess.Popen] = None
        self.log = workdir / "connect-server.log"

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
        return [str(submit), "--class", SERVER_CLASS, "--master", "local[2]",
                "--driver-memory", self.memory,
                "--conf", "spark.ui.enabled=false",
                "--conf", "spark.sql.shuffle.partitions=4",
                "--conf", f"spark.sql.warehouse.dir={self.workdir / 'warehouse'}",
                "--conf", f"spark.driver.extraJavaOptions=-Dderby.system.home={self.workdir}",
                "--conf", f"spark.connect.grpc.binding.port={self.port}",
                "--conf", "spark.connect.grpc.binding.address=127.0.0.1"]

    def start(self, timeout: float = 120.0) -> "ConnectServer":
        self.workdir.mkdir(parents=True, exist_ok=True)
        cmd = self.command()
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
        env.pop("SPARK_REMOTE", None)
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                         cwd=self.workdir, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"Spark Connect server exited ({self.proc.returncode}); "
                                   f"log: {self.log}\n{self._tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1.0):
                    return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"Spark Connect server not listening after {timeout:g} s; "
                           f"log: {self.log}\n{self._tail()}")

    def _tail(self) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class DppConnectServer(ConnectServer):
    """``dpp connect-server`` itself (the console script beside this Python), as a user
    starts it: dpp's hook inside the driver, serving every client session."""

    def __init__(self, workdir: Path, conf: Optional[dict[str, str]] = None,
                 memory: str = "1500m") -> None:
        super().__init__(workdir, memory)
        self.conf = dict(conf or {})

    def command(self) -> list[str]:
        script = Path(sys.executable).parent / "dpp"
        head = [str(script)] if script.exists() else [sys.executable, "-m", "dpp.connect_server"]
        if head[0] == str(script):
            head.append("connect-server")
        conf = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4",
                "spark.driver.memory": self.memory,
                "spark.sql.warehouse.dir": str(self.workdir / "warehouse"),
                "spark.driver.extraJavaOptions": f"-Dderby.system.home={self.workdir}",
                **self.conf}
        cmd = head + ["--port", str(self.port), "--host", "127.0.0.1", "--master", "local[2]"]
        for k, v in conf.items():
            cmd += ["--conf", f"{k}={v}"]
        return cmd

    def jvm_pids(self) -> list[int]:
        """The driver JVMs this server's process started (its child processes running java)."""
        if self.proc is None:
            return []
        out = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == self.proc.pid and b"java" in cmdline:
                out.append(int(entry))
        return out


def serve(tmp_path_factory: Any, name: str) -> Iterator[ConnectServer]:
    """A module fixture's body: one server in a fresh folder ``name``, stopped afterwards."""
    server = ConnectServer(tmp_path_factory.mktemp(name)).start()
    try:
        yield server
    finally:
        server.stop()


def client(url: str) -> Any:
    """A plain Spark Connect client session of ``url`` (a new session each call)."""
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    return RemoteSparkSession.builder.remote(url).create()
