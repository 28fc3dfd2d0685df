"""How dpp's cost grows with the number of partitions a fact has: 1,000 to 100,000.

A star join that keeps ~30 partitions of a fact with N (``tpcds partitions``): each size gets
its own data folder, generated in seconds — one small Parquet file per partition, hard-linked
from a single template (every partition holds the same rows; its value is in its folder name)
— and its own catalog database (external table, partitions recovered once; Spark's
``ALTER TABLE ... RECOVER PARTITIONS`` is the fast way it offers to register folders).

Each query runs, per relation kind, with Spark's own dynamic partition pruning (``spark``)
and with dpp's optimizer hook (``dpp``), in one session, modes alternating:

* ``path``: ``spark.read.parquet(folder)`` opened for the query (Spark lists it whole, in
  both modes: the user's own call);
* ``declared``: the folder as a dpp declared table (``register_table``, once per size, as
  ``spark.dpp.tables.NAME`` declares it once per session; each query then reads it through
  Spark's reader); Spark's own mode reads it as ``spark.read.parquet`` — the same relation;
* ``catalog``: the external table, ``REFRESH``-ed before each query.

Per run: elapsed (opening + query), dpp's phases from its report (open, analysis, build,
wait, enumeration, handoff, main query), and the rows, which must equal the answer the
generator knows. ``--lag LIST_MS,HEAD_MS`` reads the same folders through the ``lagfs:``
filesystem (:mod:`hive_splits.storage_calls`), which sleeps that long per LIST and per HEAD
in Spark's reader and dpp's lister alike: object-store latency measured, not projected.
"""
from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

log = logging.getLogger(__name__)

KINDS = ("path", "declared", "catalog")
MODES = ("spark", "dpp")
ROWS_PER_FILE = 8
FACT, DIM = "sales", "days"
PART = "day"
MANIFEST = "_partition_scale.json"
WARMUP_PARTITIONS = 100
LINKS_PER_TEMPLATE = 50_000   # ext4 allows 65,000 links to one file

Progress = Callable[[str], None]


# ------------------------------------------------------------------------- data

def kept_days(n: int, keep: int) -> list[int]:
    """The days the dimension's filter keeps: ``keep`` of them, spread over the whole range
    (every ``n // keep``-th), so no folder order or range favours either mode."""
    step = max(1, n // keep)
    return list(range(0, n, step))[:keep]


def expected(n: int, keep: int) -> list[tuple[int, int, float]]:
    """The query's answer, known from how the data is made: (day, rows, sum of amount) per
    kept day (every partition holds the template's rows)."""
    amount = sum(_template_rows()["amount"])
    return [(d, ROWS_PER_FILE, round(amount, 6)) for d in kept_days(n, keep)]


def _template_rows() -> dict[str, list[Any]]:
    return {"item": list(range(ROWS_PER_FILE)),
            "amount": [round(1.25 * (i + 1), 2) for i in range(ROWS_PER_FILE)]}


def generate(root: Path, n: int, keep: int, progress: Optional[Progress] = None) -> Path:
    """``root/p<n>``: the fact (``sales/day=<i>/part-0.parquet``, ``n`` folders) and the
    dimension (``days``: one row per day, ``pick = 1`` on the kept days). Kept when already
    made with the same sizes (its manifest says so)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    say = progress or (lambda m: log.info("%s", m))
    base = root / f"p{n}"
    manifest = base / MANIFEST
    want = {"partitions": n, "keep": keep, "rows_per_file": ROWS_PER_FILE}
    if manifest.is_file() and json.loads(manifest.read_text()) == want:
        return base
    say(f"partitions: generating {n:,} partitions under {base}")
    t0 = time.perf_counter()
    fact = base / FACT
    if fact.exists():
        import shutil

        shutil.rmtree(fact)
    fact.mkdir(parents=True)
    rows = pa.table(_template_rows(), schema=pa.schema(
        [("item", pa.int32()), ("amount", pa.float64())]))
    template = base / "_template.parquet"
    for d in range(n):
        if d % LINKS_PER_TEMPLATE == 0:   # a filesystem caps the links one file may have
            template.unlink(missing_ok=True)
            pq.write_table(rows, template)
        folder = fact / f"{PART}={d}"
        folder.mkdir()
        os.link(template, folder / "part-00000.parquet")
    template.unlink()
    kept = set(kept_days(n, keep))
    dim = base / DIM
    dim.mkdir(exist_ok=True)
    pq.write_table(pa.table({
        "d_day": pa.array(range(n), pa.int32()),
        "pick": pa.array([1 if d in kept else 0 for d in range(n)], pa.int32()),
        "d_name": pa.array([f"day {d}" for d in range(n)])}), dim / "part-00000.parquet")
    manifest.write_text(json.dumps(want))
    say(f"partitions: {n:,} made in {time.perf_counter() - t0:.1f}s")
    return base


def catalog_table(spark: Any, base: Path, location: str, progress: Optional[Progress] = None
                  ) -> str:
    """``pscale_p<n>[_lag].sales`` over ``location`` (the folder, or its ``lagfs:`` URI),
    partitions recovered once per metastore; the name of the table."""
    say = progress or (lambda m: log.info("%s", m))
    db = f"pscale_{base.name}" + ("_lag" if location.startswith("lagfs:") else "")
    name = f"{db}.{FACT}"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
    if spark.catalog.tableExists(name):
        from tpcds.bench import _table_location

        here = (_table_location(spark, name) or "").rstrip("/")
        parts = spark.sql(f"SHOW PARTITIONS {name}").count()
        if (here.endswith(location.split(":", 1)[-1].lstrip("/").rstrip("/"))
                and parts == json.loads((base / MANIFEST).read_text())["partitions"]):
            return name
        spark.sql(f"DROP TABLE {name}")
    say(f"partitions: registering {name}")
    t0 = time.perf_counter()
    spark.sql(f"CREATE TABLE {name} (item INT, amount DOUBLE, {PART} INT) USING parquet "
              f"PARTITIONED BY ({PART}) LOCATION '{location}'")
    spark.sql(f"ALTER TABLE {name} RECOVER PARTITIONS")
    say(f"partitions: {name} registered in {time.perf_counter() - t0:.1f}s")
    return name


QUERY = (f"SELECT f.{PART}, count(*) AS n, round(sum(f.amount), 6) AS amount "
         f"FROM {{fact}} f JOIN {DIM} d ON f.{PART} = d.d_day WHERE d.pick = 1 "
         f"GROUP BY f.{PART} ORDER BY f.{PART}")


# ------------------------------------------------------------------------- runs

@dataclass
class ScaleRun:
    """One query at one size, relation kind and mode."""

    partitions: int
    kind: str
    mode: str
    lag: Optional[tuple[float, float]]
    ok: bool = False
    correct: Optional[bool] = None
    error: Optional[str] = None
    open_s: Optional[float] = None
    total_s: Optional[float] = None
    phases: dict[str, float] = field(default_factory=dict)
    kept: Optional[str] = None           # dpp's "kept k of n" for the fact
    storage: Optional[dict[str, int]] = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ScaleRunner:
    """Runs the star join on one session: Spark's own DPP, and dpp's optimizer hook."""

    def __init__(self, spark: Any, keep: int, progress: Optional[Progress] = None) -> None:
        self.spark = spark
        self.keep = keep
        self.say = progress or (lambda m: log.info("%s", m))
        self._hook: Any = None
        self._declared: Optional[str] = None   # the folder declared as FACT, if any

    def hook_session(self) -> Any:
        if self._hook is None:
            from dpp import DppSession
            from dpp.frontends.hook.optimizer_hook import OptimizerHook

            session = DppSession(self.spark)
            session.optimizer_hook = OptimizerHook(session)
            self._hook = session
        return self._hook

    def close(self) -> None:
        """Takes the hook off the session (a test's session outlives the benchmark)."""
        session, self._hook = self._hook, None
        if session is not None:
            if self._declared is not None:
                session.unregister_table(FACT)
                self._declared = None
            session.close()

    def run(self, base: Path, kind: str, mode: str, location: str,
            table: Optional[str], lag: Optional[tuple[float, float]]) -> ScaleRun:
        from hive_splits.metastore import partitions_fetched_metric
        from hive_splits.storage_calls import storage_calls
        from tpcds.bench import mode_conf
        from tpcds.report import run_breakdown

        n = json.loads((base / MANIFEST).read_text())["partitions"]
        r = ScaleRun(n, kind, mode, lag)
        spark = self.spark
        hook = self.hook_session() if mode == "dpp" else None   # made once, off the clock
        spark.catalog.dropTempView(FACT)
        spark.read.parquet(str(base / DIM)).createOrReplaceTempView(DIM)
        calls0 = storage_calls(spark)
        fetched0 = partitions_fetched_metric(spark)
        try:
            with mode_conf(spark, mode):
                if kind == "declared" and mode == "dpp":
                    # declared once per session, off the clock, as a catalog table is
                    # registered once: what is timed is each query's own work
                    self._declare(location)
                t0 = time.perf_counter()
                fact = self._open(base, kind, mode, location, table)
                t1 = time.perf_counter()
                if hook is not None:
                    hook.last_report = None
                rows = spark.sql(QUERY.format(fact=fact)).collect()
                t2 = time.perf_counter()
            r.ok = True
            r.open_s, r.total_s = t1 - t0, t2 - t0
            got = [(int(x[0]), int(x[1]), round(float(x[2]), 6)) for x in rows]
            r.correct = got == expected(n, self.keep)
            if not r.correct:
                r.error = f"rows differ from the known answer: {got[:3]}..."
            report = hook.last_report.to_dict() if hook is not None and hook.last_report else None
            if report is not None:
                bd = run_breakdown({"dpp_report": report, "listing_s": r.open_s,
                                    "total_s": r.total_s}) or {}
                r.phases = {k: round(v, 4) for k, v in bd.items()}
                r.kept = _kept(report)
            calls1 = storage_calls(spark)
            fetched1 = partitions_fetched_metric(spark)
            if calls0 is not None and calls1 is not None:
                r.storage = {"list": calls1[0] - calls0[0], "head": calls1[1] - calls0[1]}
                if fetched0 is not None and fetched1 is not None and kind == "catalog":
                    # partition objects the metastore built (Spark's own counter)
                    r.storage["fetched"] = fetched1 - fetched0
        except Exception as exc:
            r.error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
            log.debug("%s/%s failed", kind, mode, exc_info=True)
        finally:
            spark.catalog.dropTempView(FACT)
        return r

    def _declare(self, location: str) -> None:
        """Declares the folder as FACT once per folder, as ``spark.dpp.tables.NAME`` declares
        it for a session."""
        hook = self.hook_session()
        if self._declared != location:
            try:   # another size's folder (or the warm-up's) was declared before
                hook.unregister_table(FACT)
            except Exception:
                pass
            hook.register_table(FACT, location)
            self._declared = location

    def _open(self, base: Path, kind: str, mode: str, location: str,
              table: Optional[str]) -> str:
        """Opens the fact as a production job would for this query; the name to query."""
        spark = self.spark
        if kind == "catalog":
            assert table is not None
            spark.catalog.refreshTable(table)
            return table
        if kind == "declared" and mode == "dpp":
            # each query makes the declared table's relation afresh (Spark's reader of the
            # folder, or the kept-partition index over it)
            self.hook_session().ensure_views([FACT])
            return FACT
        spark.read.parquet(location).createOrReplaceTempView(FACT)
        return FACT


def _kept(report: dict[str, Any]) -> Optional[str]:
    for t in report.get("tables") or []:
        kept, total = t.get("partitions_kept"), t.get("partitions_total")
        if kept is not None:
            return f"{kept}/{total if total is not None else '?'}"
    return None


# ------------------------------------------------------------------------- the benchmark

@dataclass
class ScaleConfig:
    data: Path
    sizes: list[int]
    kinds: list[str]
    modes: list[str]
    keep: int = 30
    lag: Optional[tuple[float, float]] = None
    repeat: int = 1
    # kind or mode -> the largest partition count it runs at (Spark's own listing of
    # 100,000 folders, or of 10,000 at object-store latency, takes many minutes a query)
    limits: dict[str, int] = field(default_factory=dict)

    def runs(self, n: int, kind: str, mode: str) -> bool:
        return all(n <= self.limits.get(k, n) for k in (kind, mode))


def set_lag(spark: Any, lag: Optional[tuple[float, float]]) -> None:
    """The ``lagfs:`` delays (ms per LIST, per HEAD) for what runs next in this JVM (no
    delay: nothing to set where the filesystem is not even loaded)."""
    try:
        spark._jvm.dpp.hadoop.LaggedLocalFileSystem.setDelays(
            float(lag[0]) if lag else 0.0, float(lag[1]) if lag else 0.0)
    except Exception:
        if lag:
            raise


def run_scale(spark: Any, cfg: ScaleConfig, progress: Optional[Progress] = None
              ) -> dict[str, Any]:
    """Every size × kind × mode, ``repeat`` times, modes alternating within each pair; one
    unmeasured warm-up run per kind and mode first, on a fact of 100 partitions (the
    session's first queries of each kind pay for loading and compiling its code paths, which
    would otherwise show as the smallest size's cost)."""
    say = progress or (lambda m: log.info("%s", m))
    runner = ScaleRunner(spark, cfg.keep, say)
    bases = {n: generate(cfg.data, n, cfg.keep, say) for n in cfg.sizes}
    runs: list[ScaleRun] = []
    set_lag(spark, None)   # setting up (registering 100,000 partitions) is not measured
    where = {n: str((b / FACT).resolve()) for n, b in bases.items()}
    if cfg.lag:
        from hive_splits.storage_calls import lag_uri

        where = {n: lag_uri(w) for n, w in where.items()}
    tables = ({n: catalog_table(spark, b, where[n], say) for n, b in bases.items()}
              if "catalog" in cfg.kinds else {})
    try:
        warm = generate(cfg.data, WARMUP_PARTITIONS, min(cfg.keep, WARMUP_PARTITIONS), say)
        warmer = ScaleRunner(spark, min(cfg.keep, WARMUP_PARTITIONS), say)
        warmer._hook = runner.hook_session() if "dpp" in cfg.modes else None
        warm_at = str((warm / FACT).resolve())
        warm_table = catalog_table(spark, warm, warm_at, say) if "catalog" in cfg.kinds else None
        for kind in cfg.kinds:   # warm-up: each kind's code paths once, on a small fact
            for mode in cfg.modes:
                warmer.run(warm, kind, mode, warm_at, warm_table, None)
        set_lag(spark, cfg.lag)
        for n in cfg.sizes:
            for kind in cfg.kinds:
                for rep in range(cfg.repeat):
                    order = cfg.modes if rep % 2 == 0 else list(reversed(cfg.modes))
                    for mode in [m for m in order if cfg.runs(n, kind, m)]:
                        r = runner.run(bases[n], kind, mode, where[n], tables.get(n), cfg.lag)
                        runs.append(r)
                        say(_line(r))
    finally:
        set_lag(spark, None)
        runner.close()
    return {"config": {"sizes": cfg.sizes, "kinds": cfg.kinds, "modes": cfg.modes,
                       "keep": cfg.keep, "lag": list(cfg.lag) if cfg.lag else None,
                       "repeat": cfg.repeat, "limits": cfg.limits},
            "runs": [r.to_dict() for r in runs]}


def _line(r: ScaleRun) -> str:
    if not r.ok:
        return f"  {r.partitions:>7,} {r.kind:<9} {r.mode:<6} FAILED {r.error}"
    ph = " ".join(f"{k[:-2]} {v:.2f}" for k, v in r.phases.items() if v >= 0.005)
    return (f"  {r.partitions:>7,} {r.kind:<9} {r.mode:<6} {r.total_s:7.2f}s"
            f"{'' if r.correct else '  WRONG ROWS'}"
            + (f"  kept {r.kept}" if r.kept else "") + (f"  [{ph}]" if ph else "")
            + (f"  LIST {r.storage['list']} HEAD {r.storage['head']}" if r.storage else "")
            + (f" partitions fetched {r.storage['fetched']}"
               if r.storage and "fetched" in r.storage else ""))


# ------------------------------------------------------------------------- outputs

def summary(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Per (kind, mode, size): the first (cold) run's elapsed, the mean phases of dpp."""
    rows: dict[tuple, dict[str, Any]] = {}
    for r in result["runs"]:
        key = (r["kind"], r["mode"], r["partitions"])
        row = rows.setdefault(key, {"kind": r["kind"], "mode": r["mode"],
                                    "partitions": r["partitions"], "elapsed": None,
                                    "all": [], "phases": r["phases"], "correct": True,
                                    "kept": r["kept"]})
        if r["ok"]:
            if row["elapsed"] is None:
                row["elapsed"] = r["total_s"]
            row["all"].append(r["total_s"])
        row["correct"] = row["correct"] and bool(r["ok"] and r["correct"])
    return sorted(rows.values(), key=lambda x: (KINDS.index(x["kind"]), x["mode"],
                                                x["partitions"]))


def growth(rows: list[dict[str, Any]], kind: str, mode: str) -> Optional[float]:
    """Elapsed at the largest size over the smallest, for one kind and mode."""
    mine = [r for r in rows if r["kind"] == kind and r["mode"] == mode and r["elapsed"]]
    if len(mine) < 2:
        return None
    return mine[-1]["elapsed"] / mine[0]["elapsed"]


def render_markdown(result: dict[str, Any]) -> str:
    from tpcds.report import BREAKDOWN as ALL_PHASES

    # its runs do not time Spark's readers of the dimension apart (``Run.readers_s``)
    BREAKDOWN = [b for b in ALL_PHASES if b[0] != "readers_s"]
    cfg = result["config"]
    rows = summary(result)
    lag = (f"{cfg['lag'][0]:g} ms per LIST, {cfg['lag'][1]:g} ms per HEAD (lagfs:)"
           if cfg.get("lag") else "none (local disk)")
    limits = cfg.get("limits") or {}
    out = [f"Star join keeping {cfg['keep']} partitions; injected latency: {lag}; "
           f"{cfg['repeat']} run(s) per cell, the first (cold) shown"
           + ("; not run past " + ", ".join(f"{n:,} partitions for {k}"
                                              for k, n in sorted(limits.items())) if limits else "")
           + "".join(f"; `{k}={v}`" for k, v in (cfg.get("conf") or {}).items())
           + ". Growth: the largest size run over the smallest.", "",
           "| kind | mode | " + " | ".join(f"{n:,} partitions (s)" for n in cfg["sizes"])
           + " | growth | rows |",
           "| --- | --- | " + " | ".join("---:" for _ in cfg["sizes"]) + " | ---: | --- |"]
    for kind in cfg["kinds"]:
        for mode in cfg["modes"]:
            mine = {r["partitions"]: r for r in rows if r["kind"] == kind and r["mode"] == mode}
            g = growth(rows, kind, mode)
            cells = [f"{mine[n]['elapsed']:.2f}" if n in mine and mine[n]["elapsed"] else
                     ("not run" if n not in mine else "failed") for n in cfg["sizes"]]
            ok = all(mine[n]["correct"] for n in mine)
            out.append(f"| {kind} | {mode} | " + " | ".join(cells)
                       + (f" | {g:.2f}× |" if g else " | — |")
                       + (" right |" if ok else " **WRONG** |"))
    out += ["", "dpp's phases (s), first run:", "",
            "| kind | partitions | kept | " + " | ".join(t for _, t in BREAKDOWN) + " |",
            "| --- | ---: | ---: | " + " | ".join("---:" for _ in BREAKDOWN) + " |"]
    for r in rows:
        if r["mode"] != "dpp" or not r["phases"]:
            continue
        out.append(f"| {r['kind']} | {r['partitions']:,} | {r['kept'] or '—'} | "
                   + " | ".join(f"{r['phases'].get(k, 0.0):.2f}" for k, _ in BREAKDOWN) + " |")
    return "\n".join(out) + "\n"


def render_plot(results: list[dict[str, Any]], path: Path) -> None:
    """Elapsed against partition count (log scale), one line per kind and mode; one panel
    per result (local disk, injected latency)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4.2), squeeze=False)
    for ax, result in zip(axes[0], results):
        cfg = result["config"]
        rows = summary(result)
        for kind in cfg["kinds"]:
            for mode in cfg["modes"]:
                pts = [(r["partitions"], r["elapsed"]) for r in rows
                       if r["kind"] == kind and r["mode"] == mode and r["elapsed"]]
                if pts:
                    xs, ys = zip(*pts)
                    # one color per kind and mode in every panel
                    color = f"C{KINDS.index(kind) * len(MODES) + MODES.index(mode)}" \
                        if kind in KINDS and mode in MODES else None
                    ax.plot(xs, ys, marker="o", linestyle="-" if mode == "dpp" else "--",
                            color=color,
                            label=f"{kind}, {'dpp' if mode == 'dpp' else 'Spark DPP'}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("partitions of the fact")
        ax.set_ylabel("seconds per query (cold)")
        lag = cfg.get("lag")
        title = f"{lag[0]:g} ms LIST / {lag[1]:g} ms HEAD" if lag else "local disk"
        conf = cfg.get("conf") or {}
        if conf:   # e.g. "folderTimes=hdfs,lagfs"
            title += "\n" + ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in conf.items())
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
