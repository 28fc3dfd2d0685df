"""The plan wire contract (``dpp.analysis.plan_wire``) from both sides: what the JVM describer sends for
real plans of every shape passes Python's check, and a message of another version, or with a
field missing or mistyped, is refused naming the field — and the query then runs with Spark's
plan, its rows unchanged."""
from __future__ import annotations

import copy
import logging
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpp.analysis.plan_wire import WIRE_VERSION, WireError, check_plan


def _message() -> dict[str, Any]:
    key = {"expr": 0, "type": "int", "sql": "f.k", "deterministic": True, "refs": [2],
           "attr": 2}
    dkey = {**key, "expr": 1, "sql": "d.k", "refs": [10], "attr": 10}
    return {"op": "plan", "version": WIRE_VERSION, "request": "r1", "explain": False,
            "timeZone": "UTC", "roots": [3], "nodes": [
                {"id": 0, "op": "LogicalRelation", "children": [],
                 "output": [[1, "v", "int"], [2, "k", "int"]],
                 "relation": {"kind": "path", "index": "InMemoryFileIndex",
                              "rootPaths": ["file:/f"], "partitionColumns": ["k"],
                              "bucketed": False, "partitionFiltered": False}},
                {"id": 1, "op": "LogicalRelation", "children": [],
                 "output": [[10, "k", "int"]]},
                {"id": 2, "op": "Filter", "children": [1], "output": [[10, "k", "int"]],
                 "selective": True, "inSubqueries": []},
                {"id": 3, "op": "Join", "children": [0, 2], "joinType": "INNER",
                 "output": [[1, "v", "int"], [2, "k", "int"], [10, "k", "int"]],
                 "keys": [[key, dkey]]}]}


def test_a_well_formed_message_passes() -> None:
    check_plan(_message())


@pytest.mark.parametrize("change,named", [
    (lambda m: m.pop("version"), "version None"),
    (lambda m: m.__setitem__("version", WIRE_VERSION + 1), f"version {WIRE_VERSION + 1}"),
    (lambda m: m["nodes"][0].pop("output"), "nodes[0] has no field 'output'"),
    (lambda m: m["nodes"][0]["relation"].pop("partitionColumns"),
     "nodes[0].relation has no field 'partitionColumns'"),
    (lambda m: m["nodes"][0]["relation"].__setitem__("kind", "s3"),
     "nodes[0].relation.kind is 's3' (str), expected one of ['catalog', 'lazy', 'path']"),
    (lambda m: m["nodes"][3]["keys"][0][1].__setitem__("expr", "1"),
     "nodes[3].keys[0][1].expr is '1' (str), expected integer"),
    (lambda m: m["nodes"][3]["keys"][0][0].__setitem__("refs", ["2"]),
     "nodes[3].keys[0][0].refs[0] is '2' (str), expected integer"),
    (lambda m: m["nodes"][2].__setitem__("selective", "yes"),
     "nodes[2].selective is 'yes' (str), expected boolean"),
    (lambda m: m["nodes"][1]["output"].append([11, "x"]),
     "nodes[1].output[1] is [11, 'x'], not [exprId, name, type]"),
    (lambda m: m["nodes"][3].__setitem__("children", [0, 7]), "children [7]"),
    (lambda m: m["nodes"][0].__setitem__("id", True),
     "nodes[0].id is True (bool), expected integer"),
    (lambda m: m.__setitem__("session", {"conf": {"a": 1}}),
     "session.conf.a is 1 (int), expected string"),
    (lambda m: m["nodes"][0]["relation"].__setitem__("sizeInBytes", 1.5),
     "nodes[0].relation.sizeInBytes is 1.5 (float), expected integer"),
])
def test_a_message_off_the_contract_is_refused_naming_the_field(change: Any, named: str) -> None:
    msg = copy.deepcopy(_message())
    change(msg)
    with pytest.raises(WireError, match=None) as err:
        check_plan(msg)
    assert named in str(err.value), str(err.value)


# ---------------------------------------------------------------------- the JVM side

SHAPES = {
    "join": "SELECT f.v FROM pw_fact f JOIN pw_dim d ON f.k = d.k WHERE d.x = 1",
    "in_subquery": "SELECT v FROM pw_fact WHERE k IN (SELECT k FROM pw_dim WHERE x = 1)",
    "outer_cast": "SELECT f.v FROM pw_dim d LEFT JOIN pw_fact f ON CAST(f.k AS BIGINT) = d.kl "
                  "WHERE d.x = 1",
    "aggregate_window_union": (
        "SELECT t.k, sum(t.v) OVER (PARTITION BY t.k) FROM (SELECT k, max(v) AS v FROM "
        "pw_fact GROUP BY k UNION ALL SELECT k, v FROM pw_fact) t JOIN pw_dim d "
        "ON t.k = d.k WHERE d.x = 1"),
    "expression_key": "SELECT f.v FROM pw_fact f JOIN pw_dim d ON f.k + 1 = d.k WHERE d.x = 1",
    "nondeterministic": "SELECT f.v FROM pw_fact f JOIN (SELECT * FROM pw_dim WHERE x = 1 "
                        "AND rand() < 2) d ON f.k = d.k",
}


@pytest.fixture(scope="module")
def tables(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.adversarial_support import enabled

    root = tmp_path_factory.mktemp("plan_wire")
    for k in range(4):
        (root / "f" / f"k={k}").mkdir(parents=True)
        pq.write_table(pa.table({"v": pa.array([k, k + 10], pa.int64())}),
                       root / "f" / f"k={k}" / "part-0.parquet")
    (root / "d").mkdir()
    pq.write_table(pa.table({"k": pa.array([1, 2, 3], pa.int32()),
                             "kl": pa.array([1, 2, 3], pa.int64()),
                             "x": pa.array([1, 0, 1], pa.int32())}), root / "d" / "p.parquet")
    spark.read.parquet(str(root / "f")).createOrReplaceTempView("pw_fact")
    spark.read.parquet(str(root / "d")).createOrReplaceTempView("pw_dim")
    try:
        with enabled(spark, root) as session:
            yield session
    finally:
        spark.catalog.dropTempView("pw_fact")
        spark.catalog.dropTempView("pw_dim")


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_message_the_describer_sends_is_on_the_contract(spark: Any, tables: Any,
                                                              monkeypatch: Any,
                                                              shape: str) -> None:
    from dpp.frontends.hook.optimizer_hook import OptimizerHook

    seen: list[dict[str, Any]] = []
    original = OptimizerHook.on_plan

    def recording(self: Any, msg: dict[str, Any]) -> dict[str, Any]:
        seen.append(copy.deepcopy(msg))
        return original(self, msg)

    monkeypatch.setattr(OptimizerHook, "on_plan", recording)
    spark.sql(SHAPES[shape]).collect()
    assert seen, "the rule sent no plan"
    for msg in seen:
        assert msg["version"] == WIRE_VERSION
        check_plan(msg)


def test_a_message_of_another_version_leaves_sparks_plan(spark: Any, tables: Any,
                                                         monkeypatch: Any, caplog: Any) -> None:
    """The Python side refuses (the bridge logs why), the rule keeps Spark's plan: the same
    rows, nothing pruned."""
    import dpp.analysis.plan_wire as wire
    from tests.conftest import spark_conf

    with spark_conf(spark, {"spark.dpp.enabled": "false"}):
        want = sorted(spark.sql(SHAPES["join"]).collect())
    monkeypatch.setattr(wire, "WIRE_VERSION", WIRE_VERSION + 1)
    tables.last_report = None
    with caplog.at_level(logging.WARNING, logger="dpp.frontends.hook.optimizer_hook"):
        got = sorted(spark.sql(SHAPES["join"]).collect())
    assert got == want
    assert tables.last_report is None
    assert f"version {WIRE_VERSION} from the JVM part" in caplog.text


# ------------------------------------------------------------------ the list answer


def _answers() -> dict[str, dict[str, Any]]:
    return {
        "path": {"status": "ok", "version": WIRE_VERSION, "prunedFolders": ["k=2"],
                 "droppedFiles": {"k=1": ["b.parquet"]},
                 "partitions": [{"values": {"k": "1"},
                                 "files": [["file:/f/k=1/a.parquet", 10, 1700000000000]]},
                                {"values": {"k": None}, "files": []}]},
        "catalog": {"status": "ok", "version": WIRE_VERSION, "prunedFolders": [],
                    "droppedFiles": {},
                    "catalog": {"kept": [{"k": "1"}, {"k": None}],
                                "dropped": [["file:/f/k=1/b.parquet", 5, 1700000000000]]}},
        "catalog_all_kept": {"status": "ok", "version": WIRE_VERSION, "prunedFolders": [],
                             "droppedFiles": {}, "catalog": {"kept": None, "dropped": []}},
        "none": {"status": "none", "version": WIRE_VERSION, "reason": "unknown token"},
    }


ANSWER_BREAKS = {
    "partitions renamed": ("path", lambda a: a.update(parts=a.pop("partitions"))),
    "no version": ("path", lambda a: a.pop("version")),
    "another version": ("catalog", lambda a: a.update(version=WIRE_VERSION + 1)),
    "a file of two fields": ("path", lambda a: a["partitions"][0]["files"][0].pop()),
    "a size as text": ("path", lambda a: a["partitions"][0]["files"][0].__setitem__(1, "10")),
    "a value as a number": ("path", lambda a: a["partitions"][0]["values"].update(k=1)),
    "no droppedFiles": ("path", lambda a: a.pop("droppedFiles")),
    "catalog without kept": ("catalog", lambda a: a["catalog"].pop("kept")),
    "catalog kept not a list": ("catalog", lambda a: a["catalog"].update(kept="all")),
    "both answers": ("catalog", lambda a: a.update(partitions=[])),
}


@pytest.mark.parametrize("kind", ["path", "catalog", "catalog_all_kept", "none"])
def test_a_well_formed_list_answer_passes_both_sides(spark: Any, tables: Any,
                                                     kind: str) -> None:
    import json

    from dpp.analysis.plan_wire import check_list_answer

    answer = _answers()[kind]
    check_list_answer(answer)
    if kind != "none":   # the JVM reads "none" as Spark's own listing before any check
        jvm = spark.sparkContext._jvm.dpp.spark.DppFileIndex
        assert jvm.malformedAnswer(json.dumps(answer), kind.startswith("catalog")) is None


@pytest.mark.parametrize("name", sorted(ANSWER_BREAKS))
def test_a_list_answer_off_the_contract_is_refused_on_both_sides(spark: Any, tables: Any,
                                                                 name: str) -> None:
    """An answer that lost or mistyped a field would read as fewer partitions or files: each
    side refuses it (the index then reads Spark's own listing)."""
    import json

    from dpp.analysis.plan_wire import check_list_answer

    kind, change = ANSWER_BREAKS[name]
    answer = _answers()[kind]
    change(answer)
    with pytest.raises(WireError):
        check_list_answer(answer)
    jvm = spark.sparkContext._jvm.dpp.spark.DppFileIndex
    assert jvm.malformedAnswer(json.dumps(answer), kind == "catalog") is not None


def test_a_malformed_answer_reads_sparks_listing_and_the_report_says_why(
        spark: Any, tables: Any, monkeypatch: Any) -> None:
    """dpp's encoder breaks the contract (a file entry loses its time): the scan reads
    Spark's own listing, the rows are Spark's, and the report names the broken field."""
    import dpp.frontends.hook.optimizer_hook as hook
    from tests.conftest import spark_conf

    with spark_conf(spark, {"spark.dpp.enabled": "false"}):
        want = sorted(spark.sql(SHAPES["join"]).collect())
    original = hook.encode

    def broken(table: Any, result: Any) -> list[dict[str, Any]]:
        out = original(table, result)
        for p in out:
            p["files"] = [f[:2] for f in p["files"]]
        return out

    monkeypatch.setattr(hook, "encode", broken)
    tables.last_report = None
    got = sorted(spark.sql(SHAPES["join"]).collect())
    assert got == want and got
    reasons = [t.reason or "" for t in tables.last_report.tables]
    assert any("wire contract" in r and "[uri, bytes, mtime ms]" in r for r in reasons), reasons
    assert all(t.pruning == "none" for t in tables.last_report.tables)


# ------------------------------------------------------------------ one schema, both sides


def test_the_jars_schema_is_the_schema_python_reads() -> None:
    """WireSchema.java is wire_schema.json, written by scripts/build_hook_jars.py: a schema
    edited without rebuilding would let the two sides disagree."""
    from dpp.runtime.jvm_build import WIRE_SCHEMA_JAVA, wire_schema_java

    assert WIRE_SCHEMA_JAVA.read_text() == wire_schema_java(), \
        "WireSchema.java is stale: run scripts/build_hook_jars.py"


def _plan_answers() -> dict[str, Any]:
    good = {"wrap": {"0": "t1"}, "timeout": 60.0, "describe": {"0": "dpp: k IN d.k"},
            "rowFilters": {"0": [{"attr": 2, "type": "int", "in": ["1", "2"]},
                                 {"attr": 1, "type": "date",
                                  "ranges": [["2001-01-01", "2001-02-01"]]}]}}
    return {
        "good": (good, None),
        "none": ({"status": "none", "version": WIRE_VERSION, "wrap": {}, "reason": "x"}, None),
        "no wrap": ({k: v for k, v in good.items() if k != "wrap"}, "has no field 'wrap'"),
        "token as number": ({**good, "wrap": {"0": 7}}, "wrap.0 is 7"),
        "row filter attr as text": (
            {**good, "rowFilters": {"0": [{"attr": "2", "type": "int", "in": ["1"]}]}},
            "rowFilters.0[0].attr is"),
        "range of one bound": (
            {**good, "rowFilters": {"0": [{"attr": 2, "type": "int", "ranges": [["1"]]}]}},
            "rowFilters.0[0].ranges[0] is"),
        "timeout as text": ({**good, "timeout": "60"}, "timeout is"),
    }


@pytest.mark.parametrize("name", sorted(_plan_answers()))
def test_both_sides_read_a_plan_answer_alike(spark: Any, tables: Any, name: str) -> None:
    import json

    from dpp.analysis.plan_wire import check

    answer, named = _plan_answers()[name]
    jvm = spark.sparkContext._jvm.dpp.spark.WireCheck.problemOf("planAnswer", json.dumps(answer))
    if named is None:
        check("planAnswer", answer)
        assert jvm is None
        return
    with pytest.raises(WireError) as err:
        check("planAnswer", answer)
    assert named in str(err.value), str(err.value)
    assert jvm is not None and named.split(" is")[0] in jvm, jvm


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_jvm_reads_every_plan_it_sends_as_python_does(spark: Any, tables: Any,
                                                          monkeypatch: Any, shape: str) -> None:
    """The describer's own messages pass the JVM's check of the schema too; one broken on
    the way is refused by both, at the same field."""
    import json

    from dpp.frontends.hook.optimizer_hook import OptimizerHook

    seen: list[dict[str, Any]] = []
    original = OptimizerHook.on_plan

    def recording(self: Any, msg: dict[str, Any]) -> dict[str, Any]:
        seen.append(copy.deepcopy(msg))
        return original(self, msg)

    monkeypatch.setattr(OptimizerHook, "on_plan", recording)
    spark.sql(SHAPES[shape]).collect()
    check_jvm = spark.sparkContext._jvm.dpp.spark.WireCheck.problemOf
    assert seen
    for msg in seen:
        assert check_jvm("plan", json.dumps(msg)) is None
        broken = copy.deepcopy(msg)
        broken["nodes"][0]["output"] = [[1, "v"]]
        with pytest.raises(WireError) as err:
            check_plan(broken)
        assert "nodes[0].output[0]" in str(err.value)
        assert "nodes[0].output[0]" in check_jvm("plan", json.dumps(broken))


@pytest.mark.parametrize("side", ["python", "jvm"])
def test_a_plan_answer_off_the_contract_keeps_sparks_plan_and_the_report_says_why(
        spark: Any, tables: Any, monkeypatch: Any, side: str) -> None:
    """dpp's answer to the rule breaks the contract (a row filter's column number as text):
    caught before it is sent (``python``), or — Python's check switched off — refused by the
    rule (``jvm``). Either way Spark's plan runs, the rows are Spark's, and the query's
    report names the broken field."""
    import time

    import dpp.frontends.hook.bridge as bridge
    from dpp.frontends.hook.optimizer_hook import OptimizerHook
    from tests.conftest import spark_conf

    with spark_conf(spark, {"spark.dpp.enabled": "false"}):
        want = sorted(spark.sql(SHAPES["join"]).collect())
    original = OptimizerHook.on_plan

    def broken(self: Any, msg: dict[str, Any]) -> dict[str, Any]:
        answer = original(self, msg)
        if answer.get("wrap"):
            answer["describe"] = {k: 5 for k in answer["wrap"]}
        return answer

    monkeypatch.setattr(OptimizerHook, "on_plan", broken)
    if side == "jvm":
        monkeypatch.setattr(bridge, "check", lambda *a, **k: None)
    tables.last_report = None
    got = sorted(spark.sql(SHAPES["join"]).collect())
    assert got == want and got
    deadline = time.monotonic() + 30
    while tables.last_report is None and time.monotonic() < deadline:
        time.sleep(0.1)   # the report is written once its relations are accounted for
    report = tables.last_report
    assert report is not None
    reasons = [t.reason or "" for t in report.tables]
    assert any("wire contract" in r and "describe." in r for r in reasons), reasons
    assert all(t.pruning == "none" for t in report.tables)


def test_a_narrowed_build_side_is_a_message_both_sides_check(spark: Any, tables: Any) -> None:
    """The semi-join narrowing Python hands the JVM's build (``Prune.build``'s third part)
    is the schema's ``semiBuild``: what find_prunes makes passes both checks, a mistyped one
    fails both."""
    import json

    from dpp.analysis.plan_pairs import Prune
    from dpp.analysis.plan_wire import check

    p = Prune(relation=0, column="k", build_node=2, build_expr=1, build_type="int",
              build_sql="d.k", join="INNER", build_semi=(5, ((1, 7), (3, 9))))
    semi = json.loads(p.build[2])
    check("semiBuild", semi)
    jvm = spark.sparkContext._jvm.dpp.spark.WireCheck.problemOf
    assert jvm("semiBuild", p.build[2]) is None
    broken = {**semi, "keys": ["1", 3]}
    with pytest.raises(WireError, match=r"keys\[0\]"):
        check("semiBuild", broken)
    assert "keys[0]" in jvm("semiBuild", json.dumps(broken))
