"""The plan the optimizer hook's rule sends Python: a versioned, typed wire contract.

``PlanDescriber.java`` writes it, :mod:`dpp.analysis.plan_pairs` reads it. The two sides are built
from one source tree but loaded separately (a jar cached by source digest, a Python package
that may be upgraded under a running driver), so every message carries
:data:`WIRE_VERSION` and :func:`check_plan` refuses one of another version, or one missing a
field or holding a value of the wrong type, naming the node and the field: the query then
runs with Spark's own plan, and the log says why — never a guess at what a field meant.

The shape, per node: ``id``, ``op`` (Spark's class name), ``children`` (node ids),
``output`` (``[exprId, name, type]``), and by operator ``joinType`` / ``keys`` (Join),
``map`` (``[[output exprId, source exprId]]``, Project and Aggregate), ``partitionSpec``
(Window), ``inSubqueries`` (Filter), ``selective`` (Filter), ``relation`` (a Parquet
relation read by its files, with its raw facts: ``dpp.analysis.rules.is_fact`` decides
which is a fact dpp may wrap), ``flagged`` / ``ordered`` / ``windowCalls`` (the facts the determinism
rules of :mod:`dpp.analysis.rules` decide on; ``subqueries``, the plans of the subqueries a node's
expressions evaluate, as the SQL-text translation names them). A key is ``{expr, type,
sql, deterministic, refs, attr?, cast?, from?}``.
"""
from __future__ import annotations

from typing import Any, Mapping, TypedDict

from dpp.core.errors import DppError

__all__ = ["WIRE_VERSION", "WireError", "check_plan", "check_list_answer", "PlanMessage",
           "PlanNode", "Relation", "Key", "InSubquery", "ListAnswer"]

# bumped whenever a field changes meaning or type; PlanDescriber.WIRE_VERSION is the same
WIRE_VERSION = 4


class _KeyRequired(TypedDict):
    expr: int            # the expression's number, to build a side or evaluate it
    type: str            # Spark's simpleString of its type
    sql: str
    deterministic: bool
    refs: list[int]      # the attributes (exprIds) it reads


class Key(_KeyRequired, total=False):
    """A join key or an IN-subquery's value/key."""

    attr: int            # the attribute it is, or casts
    cast: str            # the cast's target type ...
    # ... and its source type ("from")


class InSubquery(TypedDict):
    query: int           # the subquery plan's root node
    value: Key           # the outer side's value
    queryKey: Key        # the subquery's one output


class _RelationRequired(TypedDict):
    kind: str            # "path" (spark.read), "lazy" (a declared table in the SQL-text or
                         # Connect client analysis), "catalog"
    index: str           # the file index's class
    rootPaths: list[str]
    partitionColumns: list[str]   # empty: an unpartitioned relation read by its files
    bucketed: bool
    partitionFiltered: bool       # a filter of the plan reads a partition column


class Relation(_RelationRequired, total=False):
    table: str           # its catalog name
    root: str            # a declared table's root
    timestampsAgree: bool   # a reader relation's TIMESTAMP partition values are the folder
                            # names read in the session time zone now
    staticallyEmpty: bool   # a catalog table Spark's static partition filters leave empty
    namesToken: str         # its partition names as the rule listed them for this plan
    sizeInBytes: int        # an unpartitioned relation's size as Spark estimates it
    #                         (dpp.analysis.rules.is_fact decides whether it is a fact)


class _NodeRequired(TypedDict):
    id: int
    op: str              # Spark's class name
    children: list[int]
    output: list[list[Any]]       # [exprId, name, type]


class PlanNode(_NodeRequired, total=False):
    joinType: str                 # JoinType.sql (dpp.analysis.rules.join_type reads it)
    keys: list[list[Key]]         # equi-join key pairs, [left key, right key]
    map: list[list[int]]          # [output exprId, source exprId]: Project, Aggregate
    partitionSpec: list[int]      # Window
    inSubqueries: list[InSubquery]
    selective: bool               # Filter: a predicate beyond IS NOT NULL
    relation: Relation
    source: str                   # a leaf relation's name for reports: the catalog table's,
    #                               else the folder's (any relation, candidate or not)
    flagged: str                  # an expression of its own drawn per run (Spark's flag, a
    #                               function or UDF the front end found): dpp.analysis.rules decides
    ordered: bool                 # a limit with a sort right below (its rows decided by it)
    windowCalls: list[list[Any]]  # Window: [name, aggregate, ROWS frame, whole frame,
    #                               ordered] per function (dpp.analysis.rules.tie_order decides)
    byName: bool
    subqueries: list[int]         # plans of the subqueries its expressions evaluate (SQL
    #                               text only): part of a build side's determinism


class _MessageRequired(TypedDict):
    op: str
    version: int
    request: str
    explain: bool
    timeZone: str
    roots: list[int]
    nodes: list[PlanNode]


class PlanMessage(_MessageRequired, total=False):
    """One optimizer run's plan, as the rule describes it."""

    scope: str           # Spark's execution id: the runs of one query
    callSite: str        # where the user's code ran the query ("collect at job.py:31")
    broadcastThreshold: str   # spark.sql.autoBroadcastJoinThreshold as the session spells
    #                           it ("" unset): dpp.analysis.rules.is_fact reads it
    session: "ServedSessionWire"   # a session served by a driver-wide hook: its settings


class ServedSessionWire(TypedDict, total=False):
    """What a driver-wide hook needs of a session it never made (:mod:`dpp.frontends.hook.sessions`)."""

    conf: dict[str, str]     # the session's SQL conf (its --conf entries included)
    jobTags: str             # Spark's job tags on the optimizing thread


class WireError(DppError):
    """A plan message this Python side cannot read as the contract says."""


_MESSAGE = {"op": str, "request": str, "explain": bool, "timeZone": str, "roots": list,
            "nodes": list, "version": int}
_NODE = {"id": int, "op": str, "children": list, "output": list}
_OPTIONAL_NODE = {"joinType": str, "keys": list, "map": list, "partitionSpec": list,
                  "inSubqueries": list, "selective": bool, "relation": dict,
                  "flagged": str, "ordered": bool, "windowCalls": list, "byName": bool,
                  "subqueries": list, "source": str}
_RELATION = {"kind": str, "index": str, "rootPaths": list, "partitionColumns": list,
             "bucketed": bool, "partitionFiltered": bool}
_OPTIONAL_RELATION = {"table": str, "root": str, "timestampsAgree": bool,
                      "staticallyEmpty": bool, "namesToken": str, "sizeInBytes": int}
_KEY = {"expr": int, "type": str, "sql": str, "deterministic": bool, "refs": list}
_OPTIONAL_KEY = {"attr": int, "cast": str, "from": str}
_KINDS = {"path", "lazy", "catalog"}


def _fields(where: str, obj: Any, required: Mapping[str, type],
            optional: Mapping[str, type]) -> None:
    if not isinstance(obj, dict):
        raise WireError(f"plan wire: {where} is {type(obj).__name__}, not an object")
    for name, typ in required.items():
        if name not in obj:
            raise WireError(f"plan wire: {where} has no field {name!r}")
        _typed(where, name, obj[name], typ)
    for name, typ in optional.items():
        if name in obj and obj[name] is not None:
            _typed(where, name, obj[name], typ)


def _typed(where: str, name: str, value: Any, typ: type) -> None:
    ok = isinstance(value, typ) and not (typ is int and isinstance(value, bool))
    if not ok:
        raise WireError(f"plan wire: {where} field {name!r} is {value!r} "
                        f"({type(value).__name__}), expected {typ.__name__}")


def _key(where: str, key: Any) -> None:
    _fields(where, key, _KEY, _OPTIONAL_KEY)
    if not all(isinstance(r, int) for r in key["refs"]):
        raise WireError(f"plan wire: {where} field 'refs' holds a non-integer: {key['refs']!r}")


def check_plan(msg: Mapping[str, Any]) -> None:
    """Raises :class:`WireError` unless ``msg`` is a plan message of this version whose every
    node holds the fields its operator needs, of the contract's types."""
    version = msg.get("version") if isinstance(msg, dict) else None
    if version != WIRE_VERSION:
        raise WireError(f"plan wire version {version!r} from the JVM part, this Python reads "
                        f"version {WIRE_VERSION}: the hook's jar and the dpp package are from "
                        f"different builds (restart the driver to load the jar this package "
                        f"compiles)")
    _fields("the message", msg, _MESSAGE, {"scope": str, "session": dict, "callSite": str,
                                          "broadcastThreshold": str})
    about = msg.get("session")
    if about is not None:
        _fields("the message's session", about, {"conf": dict}, {"jobTags": str})
        bad = [k for k, v in about["conf"].items() if not isinstance(v, str)]
        if bad:
            raise WireError(f"plan wire: session conf {bad[0]!r} is not text")
    ids = set()
    for n in msg["nodes"]:
        where = f"node {n.get('id') if isinstance(n, dict) else '?'}"
        _fields(where, n, _NODE, _OPTIONAL_NODE)
        ids.add(n["id"])
        for col in n["output"]:
            if not (isinstance(col, list) and len(col) == 3 and isinstance(col[0], int)
                    and isinstance(col[1], str) and isinstance(col[2], str)):
                raise WireError(f"plan wire: {where} output column {col!r} is not "
                                f"[exprId, name, type]")
        for pair in n.get("keys", []):
            if not (isinstance(pair, list) and len(pair) == 2):
                raise WireError(f"plan wire: {where} join key {pair!r} is not a pair")
            for k in pair:
                _key(f"{where} join key", k)
        for m in n.get("map", []):
            if not (isinstance(m, list) and len(m) == 2 and all(isinstance(x, int) for x in m)):
                raise WireError(f"plan wire: {where} map entry {m!r} is not [exprId, exprId]")
        for call in n.get("windowCalls", []):
            if not (isinstance(call, list) and len(call) == 5 and isinstance(call[0], str)
                    and all(isinstance(x, bool) for x in call[1:])):
                raise WireError(f"plan wire: {where} window call {call!r} is not [name, "
                                f"aggregate, rows, whole, ordered]")
        for sub in n.get("inSubqueries", []):
            _fields(f"{where} IN subquery", sub, {"query": int, "value": dict,
                                                   "queryKey": dict}, {})
            _key(f"{where} IN subquery value", sub["value"])
            _key(f"{where} IN subquery key", sub["queryKey"])
        rel = n.get("relation")
        if rel is not None:
            _fields(f"{where} relation", rel, _RELATION, _OPTIONAL_RELATION)
            if rel["kind"] not in _KINDS:
                raise WireError(f"plan wire: {where} relation kind {rel['kind']!r} is none "
                                f"of {sorted(_KINDS)}")
    for n in msg["nodes"]:
        below = list(n["children"]) + [s["query"] for s in n.get("inSubqueries", [])] + \
            list(n.get("subqueries", []))
        missing = [c for c in below if c not in ids]
        if missing:
            raise WireError(f"plan wire: node {n['id']} names children {missing} the "
                            f"message does not hold")


# ---------------------------------------------------------------------------------------------
# The other direction: Python's answer to a wrapped index's "list" call (DppFileIndex.load
# checks the same contract, and reads Spark's own listing where it does not hold).
#
#   {"status": "none", "version": 1, "reason": str}                      Spark's own listing
#   {"status": "ok", "version": 1, "prunedFolders": [str], "droppedFiles": {folder: [name]},
#    "partitions": [{"values": {column: str | null}, "files": [[uri, bytes, mtime ms]]}]}
#   {"status": "ok", "version": 1, "prunedFolders": [], "droppedFiles": {},
#    "catalog": {"kept": [{column: str | null}] | null, "dropped": [[uri, bytes, mtime ms]]}}


class ListAnswer(TypedDict, total=False):
    status: str
    version: int
    reason: str
    prunedFolders: list[str]
    droppedFiles: dict[str, list[str]]
    partitions: list[dict[str, Any]]
    catalog: dict[str, Any]


def _file_entry(where: str, f: Any) -> None:
    if not (isinstance(f, list) and len(f) == 3 and isinstance(f[0], str)
            and all(isinstance(x, int) and not isinstance(x, bool) for x in f[1:])):
        raise WireError(f"list answer: {where} file {f!r} is not [uri, bytes, mtime ms]")


def _values(where: str, v: Any) -> None:
    if not (isinstance(v, dict) and all(isinstance(k, str) and (x is None or isinstance(x, str))
                                        for k, x in v.items())):
        raise WireError(f"list answer: {where} values {v!r} are not {{column: text or null}}")


def check_list_answer(answer: Mapping[str, Any]) -> None:
    """Raises :class:`WireError` unless ``answer`` is a list answer of this version whose
    fields are all there and of the contract's types: an answer that lost its partitions
    would read as "nothing kept", so a malformed one is never read as one."""
    if not isinstance(answer, dict):
        raise WireError(f"list answer {answer!r} is not an object")
    if answer.get("version") != WIRE_VERSION:
        raise WireError(f"list answer version {answer.get('version')!r}, expected "
                        f"{WIRE_VERSION}")
    status = answer.get("status")
    if status == "none":
        return
    if status != "ok":
        raise WireError(f"list answer status {status!r} is neither 'ok' nor 'none'")
    folders, dropped = answer.get("prunedFolders"), answer.get("droppedFiles")
    if not (isinstance(folders, list) and all(isinstance(f, str) for f in folders)):
        raise WireError(f"list answer: prunedFolders {folders!r} is not a list of folders")
    if not (isinstance(dropped, dict) and all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(n, str) for n in v)
            for k, v in dropped.items())):
        raise WireError(f"list answer: droppedFiles {dropped!r} is not {{folder: [names]}}")
    has_parts, has_catalog = "partitions" in answer, "catalog" in answer
    if has_parts == has_catalog:
        raise WireError("list answer: exactly one of partitions and catalog is expected")
    if has_parts:
        parts = answer["partitions"]
        if not isinstance(parts, list):
            raise WireError(f"list answer: partitions {parts!r} is not a list")
        for i, p in enumerate(parts):
            if not (isinstance(p, dict) and isinstance(p.get("files"), list)):
                raise WireError(f"list answer: partition {i} is not {{values, files}}")
            _values(f"partition {i}", p.get("values"))
            for f in p["files"]:
                _file_entry(f"partition {i}", f)
        return
    cat = answer["catalog"]
    if not (isinstance(cat, dict) and "kept" in cat and isinstance(cat.get("dropped"), list)):
        raise WireError(f"list answer: catalog {cat!r} is not {{kept, dropped}}")
    if cat["kept"] is not None:
        if not isinstance(cat["kept"], list):
            raise WireError(f"list answer: catalog kept {cat['kept']!r} is not a list")
        for i, spec in enumerate(cat["kept"]):
            _values(f"kept partition {i}", spec)
    for f in cat["dropped"]:
        _file_entry("catalog dropped", f)
