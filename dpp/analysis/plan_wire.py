"""The wire between the optimizer hook's JVM part and Python: versioned, typed, one schema.

``wire_schema.json`` defines every message in both directions — the plan the rule sends
(``PlanDescriber.java`` writes it, :mod:`dpp.analysis.plan_pairs` reads it), Python's answer
(what the rule wraps), a wrapped index's list call and its answer, a query's end — in a
subset of JSON Schema. Python checks what it receives and what it sends with :func:`check`;
the JVM checks the same text (``WireCheck.java``, the schema compiled into the jar as
``WireSchema.java``). The two sides are built from one source tree but loaded separately (a
jar cached by source digest, a Python package that may be upgraded under a running
driver), so every message carries :data:`WIRE_VERSION`; one of another version, or missing
a field, or holding a value of the wrong type is refused naming the field: the query then
runs with Spark's own plan or listing, and the log and the report say why — never a guess
at what a field meant.

The plan, per node: ``id``, ``op`` (Spark's class name), ``children`` (node ids),
``output`` (``[exprId, name, type]``), and by operator ``joinType`` / ``keys`` (Join),
``map`` (``[[output exprId, source exprId]]``, Project and Aggregate), ``partitionSpec``
(Window), ``inSubqueries`` (Filter), ``selective`` and ``sparkSelective`` (Filter), ``relation`` (a Parquet
relation read by its files, with its raw facts: ``dpp.analysis.rules.is_fact`` decides
which is a fact dpp may wrap), ``flagged`` / ``ordered`` / ``windowCalls`` (the facts the
determinism rules of :mod:`dpp.analysis.rules` decide on; ``subqueries``, the plans of the
subqueries a node's expressions evaluate, as the SQL-text translation names them). A key
is ``{expr, type, sql, deterministic, refs, attr?, cast?, from?}``.
"""
from __future__ import annotations

import json
from importlib import resources
from typing import Any, Callable, Mapping, Optional, TypedDict

from dpp.core.errors import DppError

__all__ = ["WIRE_VERSION", "SCHEMA", "WireError", "check", "check_plan", "check_list_answer",
           "PlanMessage", "PlanNode", "Relation", "Key", "InSubquery", "ListAnswer"]

SCHEMA_FILE = "wire_schema.json"


def _load_schema() -> dict[str, Any]:
    with resources.files("dpp.analysis").joinpath(SCHEMA_FILE).open("rb") as f:
        return json.load(f)


#: The wire contract, both directions (``wire_schema.json``; the JVM checks the same text)
SCHEMA: dict[str, Any] = _load_schema()
# bumped whenever a field changes meaning or type (the JVM's PlanDescriber.WIRE_VERSION is
# checked equal to it by tests/test_plan_wire.py)
WIRE_VERSION: int = SCHEMA["version"]


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
    folderNames: str        # a declared folder's partition folders as its kept-partition
    #                         index knows them (a token, as namesToken)
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
    sparkSelective: bool          # Filter: Spark's own DPP counts it as a build side's filter
    #                               (PartitionPruning.isLikelySelective); the hook's plans only
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
    """A message this side cannot read as the contract says."""


# the Python types JSON decodes each schema type to (exact: a bool is no integer)
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "integer": (int,),
    "number": (int, float), "boolean": (bool,), "null": (type(None),)}


def _resolve(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    while "$ref" in schema:
        schema = SCHEMA["$defs"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


# A compiled check: None, or (the path's segments from the fault upward, what is wrong). The
# subset of JSON Schema wire_schema.json uses; ``prefixItems`` is a tuple of exactly those
# items; ``anyOf`` reports the branch that got furthest. WireCheck.java reads the same subset
# the same way. Compiled once per schema node: a plan of hundreds of nodes is checked on
# every optimizer run, so nothing is formatted unless something is wrong.
_Check = Callable[[Any], Optional[tuple[list[str], str]]]
_COMPILED: dict[int, _Check] = {}


def _shown(value: Any) -> str:
    text = repr(value)
    return f"{text if len(text) <= 80 else text[:77] + '...'} ({type(value).__name__})"


def _compile(schema: Mapping[str, Any]) -> _Check:
    schema = _resolve(schema)
    key = id(schema)
    if key in _COMPILED:
        return _COMPILED[key]
    if "not" in schema:
        def refuse(_v: Any) -> Optional[tuple[list[str], str]]:
            return [], "is not expected here"
        _COMPILED[key] = refuse
        return refuse
    if "anyOf" in schema:
        branches = [_compile(b) for b in schema["anyOf"]]

        def any_of(v: Any) -> Optional[tuple[list[str], str]]:
            found = []
            for b in branches:
                f = b(v)
                if f is None:
                    return None
                found.append(f)
            return max(found, key=lambda f: len(f[0]))
        _COMPILED[key] = any_of
        return any_of
    steps: list[_Check] = []
    if "const" in schema:
        const = schema["const"]
        steps.append(lambda v: None if v == const else
                     ([], f"is {_shown(v)}, expected {const!r}"))
    if "enum" in schema:
        enum = schema["enum"]
        steps.append(lambda v: None if v in enum else
                     ([], f"is {_shown(v)}, expected one of {sorted(enum)}"))
    if "type" in schema:
        kinds = [schema["type"]] if isinstance(schema["type"], str) else schema["type"]
        allowed = frozenset(t for k in kinds for t in _TYPES[k])
        steps.append(lambda v: None if type(v) in allowed else
                     ([], f"is {_shown(v)}, expected {' or '.join(kinds)}"))
    what = schema.get("description", "")
    if "prefixItems" in schema:
        tuple_checks = [_compile(x) for x in schema["prefixItems"]]
        shape = what or f"a list of {len(tuple_checks)}"

        def items_of_tuple(v: Any) -> Optional[tuple[list[str], str]]:
            if not isinstance(v, list) or len(v) != len(tuple_checks):
                return [], f"is {v!r}, not {shape}"
            for i, (c, x) in enumerate(zip(tuple_checks, v)):
                f = c(x)
                if f is not None:
                    f[0].append(f"[{i}]")
                    return f
            return None
        steps.append(items_of_tuple)
    if "items" in schema:
        each = _compile(schema["items"])

        def items(v: Any) -> Optional[tuple[list[str], str]]:
            if not isinstance(v, list):
                return None
            for i, x in enumerate(v):
                f = each(x)
                if f is not None:
                    f[0].append(f"[{i}]")
                    return f
            return None
        steps.append(items)
    if "properties" in schema or "required" in schema or "additionalProperties" in schema:
        props = {n: _compile(x) for n, x in schema.get("properties", {}).items()}
        other = (_compile(schema["additionalProperties"])
                 if isinstance(schema.get("additionalProperties"), Mapping) else None)
        required = list(schema.get("required", []))

        def fields(v: Any) -> Optional[tuple[list[str], str]]:
            if not isinstance(v, dict):
                return None
            for n in required:
                if n not in v:
                    return [], f"has no field {n!r}"
            for n, x in v.items():
                c = props.get(n, other)
                if c is not None:
                    f = c(x)
                    if f is not None:
                        f[0].append(f".{n}")
                        return f
            return None
        steps.append(fields)

    if len(steps) == 1:
        _COMPILED[key] = steps[0]
        return steps[0]

    def check_all(v: Any) -> Optional[tuple[list[str], str]]:
        for step in steps:
            f = step(v)
            if f is not None:
                return f
        return None
    _COMPILED[key] = check_all
    return check_all


def check(message: str, value: Any, where: str = "wire") -> None:
    """Raises :class:`WireError` naming the field unless ``value`` is a ``message`` (one of
    the schema's ``messages``) of the contract."""
    found = _compile(SCHEMA["messages"][message])(value)
    if found is not None:
        segments, what = found
        path = "".join(reversed(segments)).lstrip(".")
        raise WireError(f"{where}: {path or 'the message'} {what}")


def check_plan(msg: Mapping[str, Any]) -> None:
    """Raises :class:`WireError` unless ``msg`` is a plan message of this version whose every
    node holds the fields its operator needs, of the contract's types, and names only nodes
    the message holds."""
    version = msg.get("version") if isinstance(msg, dict) else None
    if version != WIRE_VERSION:
        raise WireError(f"plan wire version {version!r} from the JVM part, this Python reads "
                        f"version {WIRE_VERSION}: the hook's jar and the dpp package are from "
                        f"different builds (restart the driver to load the jar this package "
                        f"compiles)")
    check("plan", msg, "plan wire")
    ids = {n["id"] for n in msg["nodes"]}
    for n in msg["nodes"]:
        below = list(n["children"]) + [s["query"] for s in n.get("inSubqueries", [])] + \
            list(n.get("subqueries", []))
        missing = [c for c in below if c not in ids]
        if missing:
            raise WireError(f"plan wire: node {n['id']} names children {missing} the "
                            f"message does not hold")


# ---------------------------------------------------------------------------------------------
# The other direction: Python's answer to a wrapped index's "list" call (wire_schema.json's
# listAnswer; DppFileIndex.load checks the same schema, and reads Spark's own listing where
# it does not hold).


class ListAnswer(TypedDict, total=False):
    status: str
    version: int
    reason: str
    prunedFolders: list[str]
    keptFolders: list[str]   # a FolderIndex's loader kept these; every other is ruled out
    droppedFiles: dict[str, list[str]]
    partitions: list[dict[str, Any]]
    catalog: dict[str, Any]


def check_list_answer(answer: Mapping[str, Any]) -> None:
    """Raises :class:`WireError` unless ``answer`` is a list answer of this version whose
    fields are all there and of the contract's types: an answer that lost its partitions
    would read as "nothing kept", so a malformed one is never read as one."""
    if not isinstance(answer, dict):
        raise WireError(f"list answer {answer!r} is not an object")
    if answer.get("version") != WIRE_VERSION:
        raise WireError(f"list answer version {answer.get('version')!r}, expected "
                        f"{WIRE_VERSION}")
    check("listAnswer", answer, "list answer")
