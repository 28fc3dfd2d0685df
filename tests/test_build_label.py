"""How a report names the optimizer hook's build side and query (``dpp.frontends.hook.answers``): the
table the key comes from, the alias where it tells a table joined twice apart, the call site.
Plan messages are written as the JVM describer writes them; no Spark session."""
from __future__ import annotations

from typing import Any

from dpp.frontends.hook.answers import build_label, plan_text
from dpp.analysis.plan_pairs import Prune


def _msg(source: str | None, call_site: str | None = None) -> dict[str, Any]:
    """fact (node 1) JOIN Project(dim key k as day, node 3) over a relation (node 4)."""
    leaf: dict[str, Any] = {"id": 4, "op": "LogicalRelation", "children": [],
                            "output": [[40, "k", "int"], [41, "m", "int"]]}
    if source is not None:
        leaf["source"] = source
    msg: dict[str, Any] = {"nodes": [
        {"id": 0, "op": "Join", "children": [1, 3], "output": [[10, "day", "int"]],
         "keys": [[{"expr": 100, "attr": 10, "sql": "f.day"},
                   {"expr": 101, "attr": 30, "sql": "d.day"}]]},
        {"id": 1, "op": "LogicalRelation", "children": [], "output": [[10, "day", "int"]],
         "source": "sales", "relation": {"kind": "path"}},
        {"id": 3, "op": "Project", "children": [4], "output": [[30, "day", "int"]],
         "map": [[30, 40]]},
        leaf]}
    if call_site:
        msg["callSite"] = call_site
    return msg


def _prune(build_sql: str) -> Prune:
    return Prune(relation=1, column="day", build_node=3, build_expr=101, build_type="int",
                 build_sql=build_sql, join="INNER")


def test_the_build_side_is_named_by_its_table_and_the_alias_that_tells_it_apart() -> None:
    assert build_label(_msg("dates"), _prune("d.day")) == "dates d.day"
    assert build_label(_msg("dates"), _prune("dates.day")) == "dates.k"   # no alias: the column
    assert build_label(_msg(None), _prune("d.day")) == "d.day"            # local rows: Spark's text


def test_a_key_that_is_no_attribute_keeps_sparks_text() -> None:
    msg = _msg("dates")
    del msg["nodes"][0]["keys"][0][1]["attr"]
    assert build_label(msg, _prune("(d.day + 1)")) == "(d.day + 1)"


def test_the_query_is_named_by_its_call_site_file() -> None:
    text = plan_text(_msg("dates", "collect at /home/me/jobs/daily.py:31"), [_prune("d.day")])
    assert text == "collect at daily.py:31: optimizer plan: prune day by d.day (INNER)"
    assert plan_text(_msg("dates"), [_prune("d.day")]) == "optimizer plan: prune day by d.day (INNER)"
