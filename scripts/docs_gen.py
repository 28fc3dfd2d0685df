"""The parts of the manual that are drawn from the code and from kept benchmark results.

Run by ``make docs`` before MkDocs builds ``docs/``::

    python scripts/docs_gen.py            # rewrite every generated block and docs/rules.md
    python scripts/docs_gen.py --check    # exit 1, naming the files, when any is stale
    python scripts/docs_gen.py import-bench bench-out/RUN --name NAME
                                          # keep a `tpcds bench` run's summary in docs/bench/

A generated block sits between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``
in README.md or any page under docs/; everything else on the page is written by hand. The
blocks:

- ``settings`` (and ``settings-common``, the five most used): the configuration reference,
  from ``dpp.runtime.config`` (each key's default from ``DppConfig``, its meaning from
  ``SETTING_DOCS``);
- ``report-schema``: the report's fields, from ``dpp.runtime.report`` (types from the dataclasses,
  meanings from ``FIELD_DOCS``);
- ``versions``: the Spark lines a hook jar is built for, from ``dpp.runtime.jvm_build.SPARK_LINES``;
- ``jvm-size``: the JVM part's size, counted as ``tests/test_docs_true.py`` counts it;
- ``bench-headline`` and ``bench-all``: tables from the summaries in ``docs/bench/*.json``,
  each made by ``import-bench`` from a ``tpcds bench`` results file, with the command, the
  data and the date that produced it.

``docs/rules.md`` is ``python -m dpp.analysis.rules`` whole. ``tests/test_docs_generated.py`` fails when
any of this is stale or a setting or report field has no description.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DOCS = ROOT / "docs"
BENCH = DOCS / "bench"
#: the run the README's headline table shows (a file of docs/bench/)
HEADLINE = "sf1-all-99"
_BLOCK = re.compile(r"(<!-- generated:(?P<name>[\w-]+) -->\n?)(?P<body>.*?)"
                    r"(<!-- /generated:(?P=name) -->)", re.S)


# ---------------------------------------------------------------------- settings

def _default_text(key: str, value: Any) -> str:
    from dpp.runtime import config as c

    parse = c._KEYS[key][1]
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if parse is c._parse_duration:
        return f"{value:g}s"
    if parse is c._parse_size:
        for unit, mult in (("g", 1024 ** 3), ("m", 1024 ** 2), ("k", 1024)):
            if value % mult == 0:
                return f"{value // mult}{unit}"
        return str(value)
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def settings_defaults() -> dict[str, str]:
    """Each key's default as one would write it in ``--conf`` (unset for tables)."""
    from dpp.runtime import config as c

    base = c.DppConfig()
    out = {key: _default_text(key, getattr(base, name)) for key, (name, _) in c._KEYS.items()}
    out[c.TABLES_PREFIX + "<name>"] = "unset"
    return out


#: the settings most users touch, in the README and on top of the configuration page
COMMON_SETTINGS = ("spark.dpp.enabled", "spark.dpp.tables.<name>", "spark.dpp.report.path",
                   "spark.dpp.waitTimeout", "spark.dpp.coordinator")


def settings_markdown(only: Optional[tuple[str, ...]] = None) -> str:
    from dpp.runtime import config as c

    defaults = settings_defaults()
    if only is not None:
        defaults = {k: defaults[k] for k in only}
    missing = [k for k in defaults if k not in c.SETTING_DOCS]
    if missing:
        raise SystemExit(f"dpp.runtime.config.SETTING_DOCS has no entry for {', '.join(missing)}")
    lines = ["| key | default | accepts | what it does |", "| --- | --- | --- | --- |"]
    for key, default in defaults.items():
        accepts, what = c.SETTING_DOCS[key]
        lines.append(f"| `{key}` | `{default}` | {accepts} | {what} |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------- report schema

def _type_text(hint: str) -> str:
    t = hint.replace(" ", "")
    optional = t.startswith("Optional[")
    if optional:
        t = t[len("Optional["):-1]
    t = {"list[FilterReport]": "list", "list[TableReport]": "list",
         "list[dict[str,Any]]": "list", "dict[str,Any]": "object",
         "dict[str,float]": "object", "dict[str,Optional[int]]": "object",
         "list[str]": "list of str"}.get(t, t)
    return t + (" or null" if optional else "")


def report_fields() -> dict[str, list[tuple[str, str]]]:
    """Field names and types per record, in the order the report writes them."""
    from dpp.runtime import report as r

    def of(cls: Any, spec: dict[str, Any]) -> list[tuple[str, str]]:
        types = {f.name: str(f.type) for f in dataclasses.fields(cls)}
        return [(name, _type_text(types.get(name, "dict[str,Any]"))) for name in spec]

    job = [(n, t) for n, t in of(r.JobReport, r._JOB_SPEC)]
    table_filters = [(n, {"filter_id": "str", "arrived": "bool", "outcome": "str",
                          "reason": "str or null"}[n]) for n in r._TABLE_FILTER_SPEC]
    return {"job": job, "filters": of(r.FilterReport, r._FILTER_SPEC),
            "tables": of(r.TableReport, r._TABLE_SPEC), "tables.filters": table_filters}


def report_markdown() -> str:
    from dpp.runtime import report as r

    titles = {"job": "The job (one JSON line)", "filters": "`filters[]`: one per dynamic filter",
              "tables": "`tables[]`: one per table reference",
              "tables.filters": "`tables[].filters[]`: the filters on one reference"}
    out: list[str] = []
    for record, fields in report_fields().items():
        missing = [f"{record}.{n}" for n, _ in fields if f"{record}.{n}" not in r.FIELD_DOCS]
        if missing:
            raise SystemExit(f"dpp.runtime.report.FIELD_DOCS has no entry for {', '.join(missing)}")
        out += [f"### {titles[record]}", "", "| field | type | meaning |", "| --- | --- | --- |"]
        out += [f"| `{n}` | {t} | {r.FIELD_DOCS[f'{record}.{n}']} |" for n, t in fields]
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------- benchmarks

def _command(cfg: dict[str, Any], out: str, env: Optional[dict[str, Any]] = None) -> str:
    data = Path(cfg["data_dir"])
    data_arg = f"data/{data.name}" if data.parent.name == "data" else str(data)
    server = _server_command(cfg, env)
    kinds = cfg["table_kinds"]
    kind = "both" if sorted(kinds) == ["catalog", "path"] else kinds[0]
    parts = ["tpcds bench", f"--data {data_arg}", f"--modes {','.join(cfg['modes'])}",
             f"--queries {cfg['queries']}", f"--repeat {cfg['repeat']}"]
    if not cfg.get("warmup", True):
        parts.append("--no-warmup")
    if not cfg.get("check", True):
        parts.append("--no-check")
    parts.append(f"--table-kind {kind}")
    if cfg.get("query_timeout_s"):
        parts.append(f"--query-timeout {cfg['query_timeout_s']:g}")
    if server:
        parts.insert(2, "--connect sc://127.0.0.1:15002")
    parts.append(f"--out {out}")
    return " ".join(parts)


def _server_command(cfg: dict[str, Any], env: Optional[dict[str, Any]]) -> Optional[str]:
    """The server a run was a client of, when it was ``dpp connect-server`` (the run's
    session conf says so)."""
    conf = (env or {}).get("conf") or {}
    if str(conf.get("spark.dpp.connectServer", "")).lower() != "true":
        return None
    data = Path(cfg["data_dir"])
    data_arg = f"data/{data.name}" if data.parent.name == "data" else str(data)
    return f"tpcds connect-server --dpp --data {data_arg} --port 15002"


def bench_summary(results_dir: Path, name: str) -> dict[str, Any]:
    """The figures the manual shows of one ``tpcds bench`` run, from its results.json."""
    d = json.loads((results_dir / "results.json").read_text())
    if not d.get("complete"):
        raise SystemExit(f"{results_dir}: the run is not complete")
    cfg = d["config"]
    started = dt.datetime.fromtimestamp(d["started"], dt.timezone.utc)
    env = d.get("environment", {})
    from tpcds.report import measured_runs, summarize

    # the headline is the cold run (each query's first measured run per mode), whatever
    # semantics the run's own stored summary was written under
    summary = summarize(d)
    per: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for run in measured_runs(d, "cold"):
        per.setdefault((run["kind"], run["mode"], run["query"]), []).append(run)
    kinds: dict[str, Any] = {}
    # what dpp is set against: Spark's own pruning, or (a hook-against-text run) the SQL text
    base = next((m for m in ("spark", "text") if m in cfg["modes"]), None)
    for kind, k in summary["kinds"].items():
        modes = {}
        for mode in cfg["modes"]:
            runs = {q: rs for (kd, m, q), rs in per.items() if kd == kind and m == mode}
            modes[mode] = {
                "queries": len(runs),
                "ran": sum(all(r["ok"] for r in rs) for rs in runs.values()),
                "correct": sum(all(r.get("correct") is True for r in rs) for rs in runs.values()),
                "total_s": round(k["totals"][mode]["total_s"], 1),
            }
        ratios = []
        if base is not None and "dpp" in cfg["modes"]:
            for (kd, m, q), rs in per.items():
                if kd == kind and m == "dpp" and (kind, base, q) in per:
                    sp = statistics.median(r["total_s"] for r in per[(kind, base, q)])
                    dp = statistics.median(r["total_s"] for r in rs)
                    if sp > 0:
                        ratios.append((q, round(dp / sp, 2)))
        ratios.sort(key=lambda x: -x[1])
        kinds[kind] = {"modes": modes, "slowest_dpp_over_spark": ratios[:3],
                       "over_1_1": sum(1 for _, x in ratios if x > 1.1)}
    sf = d["data"].get("sf")
    return {
        "name": name,
        "command": _command(cfg, f"bench-out/{results_dir.name}", env),
        **({"server": _server_command(cfg, env)} if _server_command(cfg, env) else {}),
        "date": started.strftime("%Y-%m-%d"),
        "wall_minutes": round((d["finished"] - d["started"]) / 60, 1),
        "data": {"scale_factor": sf, "generator": d["data"].get("generator"),
                 "store_sales_partitions": d["data"].get("tables", {}).get("store_sales", {})
                 .get("partitions")},
        "environment": {"spark": env.get("spark"), "python": env.get("python"),
                        "cpus": env.get("cpus"), "master": env.get("conf", {}).get("spark.master")},
        "queries": cfg["queries"], "repeat": cfg["repeat"], "warmup": cfg.get("warmup", True),
        "headline": "cold",
        "checked_against_duckdb": cfg.get("check", True),
        **({"baseline": base} if base not in (None, "spark") else {}),
        "kinds": kinds,
    }


def load_bench() -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(BENCH.glob("*.json"))]


def _sf(s: dict[str, Any]) -> str:
    return f"SF{s['data']['scale_factor']:g}"


def _queries(s: dict[str, Any]) -> str:
    q = s["queries"]
    n = len(q.split(","))
    return "all 99 queries" if q == "all" else q if n == 1 else f"{n} queries ({q})"


def bench_run_markdown(s: dict[str, Any]) -> str:
    modes = list(next(iter(s["kinds"].values()))["modes"])
    base = s.get("baseline", "spark")
    others = [m for m in modes if m != base]
    head = ["table kind"] + [f"{m} (s)" for m in modes] + [f"{m} / {base}" for m in others] \
        + ["correct", f"slowest dpp / {base}"]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(["---"] + ["---:"] * (
        len(head) - 3) + ["---", "---"]) + " |"]
    for kind, k in s["kinds"].items():
        ms = k["modes"]
        cells = [kind] + [f"{ms[m]['total_s']:,.1f}" for m in modes]
        cells += [f"**{ms[m]['total_s'] / ms[base]['total_s']:.2f}**" if m == "dpp" else
                  f"{ms[m]['total_s'] / ms[base]['total_s']:.2f}" for m in others]
        cells.append(", ".join(f"{m} {ms[m]['correct']}/{ms[m]['queries']}" for m in modes))
        cells.append(", ".join(f"{q} {x:.2f}" for q, x in k["slowest_dpp_over_spark"]) or "—")
        lines.append("| " + " | ".join(cells) + " |")
    env = s["environment"]
    # one run per query and mode is the cold run whenever it was kept
    cold = s.get("headline") == "cold" or s["repeat"] == 1
    runs = (f"{s['repeat']} measured run{'s' if s['repeat'] > 1 else ''} per query and mode"
            + (", the first (cold) shown" if cold and s["repeat"] > 1 else
               "" if cold else ", medians (warm runs included) shown"))
    note = (f"{_sf(s)}, {_queries(s)}, {runs}"
            f"{'' if s['warmup'] else ', no warm-up'}; answers checked against DuckDB"
            if s["checked_against_duckdb"] else "; answers not checked")
    ratio_of = "cold runs" if cold else "medians"
    server = f"`{s['server']} &`, then\n" if s.get("server") else ""
    return (f"{server}`{s['command']}`\n\n" + "\n".join(lines) + "\n\n"
            f"{note}. Run on {s['date']} (UTC) in {s['wall_minutes']:g} min; Spark "
            f"{env['spark']}, Python {env['python']}, `{env['master']}` on {env['cpus']} cores. "
            "Times are elapsed seconds summed over the queries, each opening its tables afresh; "
            f"\"slowest\" is the per-query ratio of {ratio_of}.\n")


def bench_headline_markdown() -> str:
    runs = {s["name"]: s for s in load_bench()}
    if HEADLINE not in runs:
        return "(no kept benchmark run: see docs/benchmarks.md)\n"
    return bench_run_markdown(runs[HEADLINE])


def bench_all_markdown() -> str:
    out = []
    for s in load_bench():
        through = (", through Spark Connect (`dpp connect-server`)"
                   if s.get("server") else "")
        out += [f"### {_sf(s)}, {_queries(s)}{through}", "", bench_run_markdown(s)]
    return "\n".join(out) if out else "(no kept benchmark run)\n"


# ---------------------------------------------------------------------- the JVM part

def jvm_size() -> str:
    """The JVM part's size as the README states it (``tests/test_docs_true.py`` counts alike)."""
    sources = sorted((ROOT / "dpp" / "jvm" / "src").rglob("*.java"))
    lines = [ln for f in sources for ln in f.read_text().splitlines()]
    code = [ln for ln in lines if ln.strip() and not re.match(r"\s*(//|\*|/\*)", ln)]
    return f"{len(lines):,} lines of Java, {len(code):,} of them code"


# ---------------------------------------------------------------------- supported versions

def versions_markdown() -> str:
    """The Spark lines the package builds a hook jar for (``dpp.runtime.jvm_build.SPARK_LINES``) and
    the Python it installs on (setup.cfg's ``python_requires``)."""
    import configparser

    from dpp.runtime.jvm_build import SPARK_LINES

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    python = cfg.get("options", "python_requires", fallback="").strip()
    lines = ["| Spark line | hook jar built against | Scala | Java |", "| --- | --- | --- | --- |"]
    for line, (release, scala, java) in SPARK_LINES.items():
        lines.append(f"| {line} | pyspark {release} | {scala} | {java}+ |")
    return "\n".join(lines) + f"\n\nPython {python.replace('>=', '')} or later" \
        f" (`python_requires {python}`).\n"


# ---------------------------------------------------------------------- the files

GENERATORS: dict[str, Callable[[], str]] = {
    "settings": settings_markdown,
    "settings-common": lambda: settings_markdown(COMMON_SETTINGS),
    "report-schema": report_markdown,
    "bench-headline": bench_headline_markdown,
    "bench-all": bench_all_markdown,
    "versions": versions_markdown,
    "refusals-table": lambda: _refusals("table"),
    "refusals-key": lambda: _refusals("key"),
    "jvm-size": jvm_size,   # inline: <!-- generated:jvm-size -->…<!-- /generated:jvm-size -->
}


def _refusals(scope: str) -> str:
    from dpp.core.refusals import refusals_markdown

    return refusals_markdown(scope)


def rules_page() -> str:
    return subprocess.run([sys.executable, "-m", "dpp.analysis.rules"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout


def pages() -> list[Path]:
    return [ROOT / "README.md"] + sorted(DOCS.rglob("*.md"))


def render(text: str, cache: Optional[dict[str, str]] = None) -> str:
    """``text`` with every generated block filled afresh."""
    cache = {} if cache is None else cache

    def fill(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in GENERATORS:
            raise SystemExit(f"unknown generated block {name!r}")
        if name not in cache:
            cache[name] = GENERATORS[name]()
        return m.group(1) + cache[name] + m.group(4)

    return _BLOCK.sub(fill, text)


def stale() -> list[str]:
    """Files whose generated parts differ from what the code and kept results give."""
    out, cache = [], {}
    for p in pages():
        if p.name == "rules.md" and p.parent == DOCS:
            if p.read_text() != rules_page():
                out.append(str(p.relative_to(ROOT)))
            continue
        text = p.read_text()
        if render(text, cache) != text:
            out.append(str(p.relative_to(ROOT)))
    return out


def write_all() -> list[str]:
    changed, cache = [], {}
    for p in pages():
        text = p.read_text()
        new = rules_page() if (p.name == "rules.md" and p.parent == DOCS) else render(text, cache)
        if new != text:
            p.write_text(new)
            changed.append(str(p.relative_to(ROOT)))
    return changed


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="docs_gen", description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only say which files are stale")
    sub = ap.add_subparsers(dest="cmd")
    ib = sub.add_parser("import-bench", help="keep a tpcds bench run's summary in docs/bench/")
    ib.add_argument("results", help="the run's --out folder (holding results.json)")
    ib.add_argument("--name", required=True, help="the summary's file name (no .json)")
    args = ap.parse_args(argv)
    if args.cmd == "import-bench":
        summary = bench_summary(Path(args.results), args.name)
        BENCH.mkdir(parents=True, exist_ok=True)
        target = BENCH / f"{args.name}.json"
        target.write_text(json.dumps(summary, indent=1) + "\n")
        print(f"wrote {target.relative_to(ROOT)}; run python scripts/docs_gen.py to show it")
        return 0
    if args.check:
        bad = stale()
        for f in bad:
            print(f"stale: {f} (python scripts/docs_gen.py rewrites it)", file=sys.stderr)
        return 1 if bad else 0
    for f in write_all():
        print(f"regenerated {f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
