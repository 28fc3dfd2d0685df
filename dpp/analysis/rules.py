"""The pruning rules, written once: every front end (the optimizer hook's plan, SQL text, the
Spark Connect plan, ``dpp.join``) asks this module and nothing else.

Four questions decide whether a join key may prune a relation:

* **Which side of a join may be pruned** (:func:`may_prune`): only a side whose rows are
  needed only when they match the other side — both sides of an inner join, the left of a
  left-semi join (``IN``/``EXISTS``), the non-preserved side of an outer join. Never the
  preserved side, never either side of an anti or full outer join (dropping a row there
  changes the answer: it would come out unmatched, or not at all).
* **How a key passes through an operator** (:data:`KEY_PASSAGE`): a row filter on a column
  may move below an operator only when the operator neither invents the column's values nor
  decides which rows come out by rows a filter would remove (a limit, a sample).
* **Whether a build side is worth a job**: it must filter something (see
  :func:`rules_markdown`; :func:`dpp.analysis.plan_pairs.find_prunes` asks it of the typed plan).
* **Whether a side is repeatable** (:data:`NONDETERMINISTIC_FUNCTIONS`,
  :data:`ROW_DROPPING_OPERATORS`): a build side is run again (in a clone of the session, at
  another instant) for its keys, so it must give the same keys; a fact read below a
  nondeterministic operator is never pruned (its answer depends on the files read).

The tables are data so that the docs' rules table and the test that holds every front end
to it (``tests/test_rules_table.py``) read the same thing the code does.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Optional

from dpp.core.spark_rules import broadcast_threshold

__all__ = ["JoinType", "join_type", "may_prune", "prunable_sides", "output_sides", "KEY_PASSAGE",
           "ROW_DROPPING_OPERATORS", "POSITIONAL_OPERATORS", "NONDETERMINISTIC_FUNCTIONS",
           "RERUN_FUNCTIONS", "unrepeatable", "node_unrepeatable", "build_side_unrepeatable",
           "decided_by_sort", "is_fact", "rules_markdown"]


class JoinType(str, Enum):
    """Join types by Spark's own names (``JoinType.sql``)."""

    INNER = "INNER"
    CROSS = "CROSS"
    LEFT_OUTER = "LEFT OUTER"
    RIGHT_OUTER = "RIGHT OUTER"
    FULL_OUTER = "FULL OUTER"
    LEFT_SEMI = "LEFT SEMI"
    LEFT_ANTI = "LEFT ANTI"
    EXISTENCE = "EXISTENCE"   # Spark's ExistenceJoin (an IN/EXISTS under an OR)


# join type -> (left side may be pruned, right side may be pruned)
_PRUNABLE: dict[JoinType, tuple[bool, bool]] = {
    JoinType.INNER: (True, True),
    JoinType.CROSS: (False, False),      # no equi-key to prune by
    JoinType.LEFT_OUTER: (False, True),
    JoinType.RIGHT_OUTER: (True, False),
    JoinType.FULL_OUTER: (False, False),
    JoinType.LEFT_SEMI: (True, True),    # the right: its rows only ever test for a match
    JoinType.LEFT_ANTI: (False, False),
    JoinType.EXISTENCE: (False, False),  # every left row comes out, flagged
}

# every spelling a front end uses: Spark's JoinType.sql and toString, DataFrame ``how``
# strings, sqlglot's side/kind, the Connect protobuf's enum names
_SPELLINGS: dict[str, JoinType] = {
    "inner": JoinType.INNER, "cross": JoinType.CROSS,
    "left": JoinType.LEFT_OUTER, "leftouter": JoinType.LEFT_OUTER,
    "right": JoinType.RIGHT_OUTER, "rightouter": JoinType.RIGHT_OUTER,
    "full": JoinType.FULL_OUTER, "outer": JoinType.FULL_OUTER,
    "fullouter": JoinType.FULL_OUTER,
    "semi": JoinType.LEFT_SEMI, "leftsemi": JoinType.LEFT_SEMI,
    "anti": JoinType.LEFT_ANTI, "leftanti": JoinType.LEFT_ANTI,
    "existence": JoinType.EXISTENCE,
}


def join_type(spelling: str) -> Optional[JoinType]:
    """A join type from any front end's spelling (``"LEFT OUTER"``, ``"left_outer"``,
    ``"leftouter"``, ``"JOIN_TYPE_LEFT_OUTER"``, ``"LeftSemi"``), None when unknown."""
    key = spelling.strip().lower()
    if key.startswith("join_type_"):
        key = key[len("join_type_"):]
    if key.startswith("existencejoin"):
        key = "existence"
    key = key.replace("_", "").replace(" ", "")
    return _SPELLINGS.get(key)


def may_prune(how: "JoinType | str", side: str) -> bool:
    """Whether ``side`` (``"left"`` or ``"right"``) of a join of type ``how`` may be pruned by
    the other side's keys. An unknown join type prunes nothing."""
    jt = how if isinstance(how, JoinType) else join_type(how)
    if jt is None:
        return False
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', not {side!r}")
    left, right = _PRUNABLE[jt]
    return left if side == "left" else right


# join types whose right side's columns never come out of the join (only the left's rows,
# kept or flagged): a key of that side is no column of anything above
_RIGHT_HIDDEN = frozenset({JoinType.LEFT_SEMI, JoinType.LEFT_ANTI, JoinType.EXISTENCE})


def output_sides(how: "JoinType | str") -> tuple[str, ...]:
    """The sides whose columns a join of type ``how`` outputs (a semi, anti or existence
    join outputs its left side's only)."""
    jt = how if isinstance(how, JoinType) else join_type(how)
    return ("left",) if jt in _RIGHT_HIDDEN else ("left", "right")


def prunable_sides(how: "JoinType | str") -> tuple[str, ...]:
    """The sides of a join of type ``how`` that may be pruned, in order left, right."""
    return tuple(s for s in ("left", "right") if may_prune(how, s))


# operator -> how a join key (a column) passes through it on its way down to the relation
# it reads; an operator not named here stops the key (a filter there may change the answer)
KEY_PASSAGE: dict[str, str] = {
    "Filter": "unchanged",
    "Sort": "unchanged",
    "Repartition": "unchanged",
    "RepartitionByExpression": "unchanged",
    "RebalancePartitions": "unchanged",
    "SubqueryAlias": "unchanged",
    "ResolvedHint": "unchanged",
    "Distinct": "unchanged",
    "Deduplicate": "unchanged",
    "Project": "as the column it renames (a computed column stops it)",
    "Aggregate": "a grouping key only (an aggregate's result stops it)",
    "Window": "a partition key only (an ordering or a window function's result stops it)",
    "Union": "by position, through every branch",
    "Join": "into the side that outputs it",
}

# operators that keep some rows only, and not the same ones on every run: they make a build
# side unrepeatable and a fact read below them unprunable (unless a sort above decides a limit)
ROW_DROPPING_OPERATORS: frozenset[str] = frozenset({
    "Sample", "GlobalLimit", "LocalLimit", "Tail", "Offset"})

# the names Spark's versions (and the front ends) give the same operators
POSITIONAL_OPERATORS: frozenset[str] = ROW_DROPPING_OPERATORS | frozenset({
    "Limit", "LimitAndOffset", "OffsetAndLimit", "GlobalLimitAndOffset"})
# of those, the ones a sort right below decides (which rows a limit keeps; never which a
# sample draws)
SORT_DECIDED_OPERATORS: frozenset[str] = POSITIONAL_OPERATORS - {"Sample"}


def unrepeatable(op: str, flagged: Optional[str] = None) -> Optional[str]:
    """Why the rows of one plan node — its operator and its own expressions, not its inputs
    — may differ between two runs over the same input, as notes name it (``GlobalLimit``,
    ``Filter (rand(3) < 0.5)``), or None. The one per-node decision: every front end records
    the facts (``op``, Spark's name of the operator; ``flagged``, an expression it found
    drawn per run: Spark's own ``deterministic`` flag on the hook's plan, a function of
    :data:`NONDETERMINISTIC_FUNCTIONS` or a nondeterministic UDF in SQL text and Connect
    plans) and :mod:`dpp.analysis.plan_pairs` asks this."""
    if op in POSITIONAL_OPERATORS:
        return op
    if flagged:
        return f"{op} ({flagged})"
    return None


def decided_by_sort(op: str, flagged: Optional[str], ordered: bool) -> bool:
    """Whether a node :func:`unrepeatable` names keeps the same rows whatever files are read
    below it: a limit whose rows a sort right below decides (``ordered``, a front end's
    fact), with no expression of its own drawn per run."""
    return ordered and op in SORT_DECIDED_OPERATORS and not flagged


def is_fact(partitioned: bool, size_bytes: Optional[int], broadcast: Optional[str]) -> bool:
    """Whether a Parquet relation read by its files is a *fact*: one dpp may prune, and whose
    scan makes a build side reading it costly. A partitioned relation always is; an
    unpartitioned one when Spark would not broadcast it (``size_bytes`` at least the
    session's ``spark.sql.autoBroadcastJoinThreshold``, ``broadcast`` as the session spells
    it, read by :func:`dpp.core.spark_rules.broadcast_threshold`: 10 MB when unset or off):
    only then can its joins on data columns skip enough files and row groups to pay a build
    side. An unpartitioned relation whose size nobody measured (a table registered by path,
    before it is listed) counts as one. The one answer every front end asks, over the facts
    it records: the hook's describer (partition schema, Spark's ``sizeInBytes`` and the raw
    setting, on the plan wire), the SQL-text and Connect analyses (the table's partition
    columns and catalog estimate) and the runtime's catalog and decision."""
    if partitioned:
        return True
    return size_bytes is None or size_bytes >= broadcast_threshold(broadcast)


# functions whose value is drawn per row or per task: moving a filter past them, or reading
# other files below them, changes which rows they see
NONDETERMINISTIC_FUNCTIONS: frozenset[str] = frozenset({
    "rand", "random", "randn", "uuid", "shuffle", "monotonically_increasing_id",
    "spark_partition_id", "input_file_name", "input_file_block_start",
    "input_file_block_length", "current_timestamp", "now", "try_reflect", "reflect",
    "java_method", "randstr", "uniform", "try_aes_decrypt"})

# and those that give another value when the same plan runs again at another instant: a build
# side is run as a query of its own, so these disqualify it too
RERUN_FUNCTIONS: frozenset[str] = NONDETERMINISTIC_FUNCTIONS | frozenset({
    "current_date", "curdate", "localtimestamp", "current_time", "unix_timestamp",
    "rand_str"})


# window functions whose value for a row depends on the order in which the rows that tie on
# the window's ORDER BY arrive (rank-like functions give ties one value); first/last pick a
# row of their frame by that order too
TIE_ORDER_FUNCTIONS: frozenset[str] = frozenset({
    "row_number", "ntile", "lag", "lead", "nth_value", "first", "last", "first_value",
    "last_value", "any_value"})


@dataclass(frozen=True)
class WindowCall:
    """A window function as a front end finds it: the facts :func:`tie_order` decides on."""

    function: str          # its SQL name (row_number, sum, ...), any case
    aggregate: bool        # an aggregate function (sum, count...) over the window
    rows_frame: bool       # its frame counts ROWS (not RANGE: a RANGE frame holds all ties)
    whole_frame: bool      # the frame is the whole partition (UNBOUNDED to UNBOUNDED)
    ordered: bool          # the window has an ORDER BY

    def wire(self) -> list:
        """As the plan wire carries it (``windowCalls``): [name, aggregate, rows, whole,
        ordered]; ``WindowCall(*wire)`` reads it back."""
        return [self.function.lower(), self.aggregate, self.rows_frame, self.whole_frame,
                self.ordered]


def tie_order(calls: Iterable[WindowCall]) -> Optional[str]:
    """Why one of a window operator's functions gives a row a value that depends on the
    order of tied rows — so a build side holding it may keep other keys when run again — or
    None. The one decision every front end (the hook's describer, SQL text, Connect plans)
    asks; each only records what it sees. On the fact side Spark itself leaves the order of
    ties open, so it does not stop pruning there."""
    for c in calls:
        name = c.function.lower()
        if name in TIE_ORDER_FUNCTIONS:
            return name
        if c.aggregate and c.ordered and c.rows_frame and not c.whole_frame:
            return f"{name} over a ROWS frame"
    return None


def node_unrepeatable(op: str, flagged: Optional[str] = None,
                      calls: Iterable[WindowCall] = ()) -> Optional[str]:
    """Why one node of a *build side* may give other rows when the build side runs again:
    :func:`unrepeatable`, or a window function whose value depends on the order of ties
    (:func:`tie_order`). The per-node decision of a build side's determinism, on the facts
    every front end records (``op``, ``flagged``, its window calls): the typed plan's
    (:mod:`dpp.analysis.plan_pairs`), a classic DataFrame's (the describer's node facts) and
    a Connect DataFrame's (its protobuf plan) all ask it."""
    why = unrepeatable(op, flagged)
    if why is None:
        ties = tie_order(calls)
        why = f"{op} ({ties})" if ties else None
    return why


def build_side_unrepeatable(nodes: Iterable[dict]) -> Optional[str]:
    """The first reason :func:`node_unrepeatable` gives for a node of a build side, given as
    the plan wire's node facts (``op``, ``flagged``, ``windowCalls``); None when every node
    gives the same rows again."""
    for n in nodes:
        why = node_unrepeatable(n["op"], n.get("flagged"),
                                (WindowCall(*c) for c in n.get("windowCalls") or []))
        if why is not None:
            return why
    return None


#: What a pruned scan reads, per relation kind: the rule users can check a query against.
RELATIONS_RULE = (
    "Relations: Spark defines every relation, dpp only removes what provably cannot match. "
    "A pruned scan reads a subset of exactly the files Spark's own scan of that relation "
    "reads with `spark.dpp.enabled=false`, never a file Spark would not read. A "
    "`spark.read.parquet` relation is Spark's listing, made with the DataFrame under its "
    "reader options, less the partitions and files dpp ruled out. A catalog table is Spark's "
    "catalog index asked with the partitions dpp kept as a partition predicate — the "
    "metastore's partitions, locations, value types and escapes, Spark's file-status cache "
    "and `ignoreMissingFiles` / `ignoreCorruptFiles` — less the files statistics or buckets "
    "ruled out (matched by path, size and modification time); a catalog table dpp does not "
    "prune is Spark's alone. A declared table (`spark.dpp.tables.*`) is "
    "`spark.read.parquet` of its folder, made by Spark's reader for each query that names "
    "it (each `spark.sql`, each `spark.table`), so schema, column order, partition types, "
    "hidden files and the files of that moment are Spark's, and a DataFrame used again reads "
    "the listing it was made with. One of at least `spark.dpp.declaredTables.keptListing` "
    "partition folders is that reader's relation over dpp's kept-partition index, used only "
    "where the folder names and the first data file prove the reader's schema and partition "
    "types: the folders are known by name, a partition's files are listed by Spark's own "
    "index when a scan first keeps it, and its values are cast by Spark's own partition-value "
    "cast; on `dpp connect-server` it is the global view "
    "``global_temp.NAME``, whose text each query that names it parses again in its own "
    "session, so it reads what that session's `spark.read.parquet` reads then (on Spark 3.5, "
    "Spark's view keeps the column types of the server's start). A build side's cached filter "
    "(off by default) is reused only when the build side's plan, its relations' schemas and "
    "reader options, the session settings that change values, and its input files (size, "
    "modification time and, where the storage gives them, inode and change time or ETag) "
    "are all unchanged. On `dpp connect-server`, each client session's own settings govern "
    "dpp's work for it. To check a query: the files its scans read "
    "(`df.inputFiles()`, or the executed plan's scan nodes) are a subset of those of the "
    "same query with `spark.dpp.enabled=false`, and its rows are the same; "
    "`make fuzz` checks both over generated relations, queries and settings.")


def rules_markdown() -> str:
    """The rules as the docs show them (``docs/rules.md`` is this text)."""
    lines = ["| join type | left side pruned | right side pruned | columns out |",
             "| --- | --- | --- | --- |"]
    for jt, (left, right) in _PRUNABLE.items():
        lines.append(f"| {jt.value} | {'yes' if left else 'no'} | {'yes' if right else 'no'} "
                     f"| {' and '.join(output_sides(jt))} |")
    lines += ["", "A left-semi join's right side is pruned too: its rows only test the left's "
              "for a match, so a row whose key no left row holds changes no answer (`d LEFT "
              "SEMI JOIN f`; not yet a fact inside `WHERE d.k IN (SELECT f.k FROM f)`, "
              "which the analysis meets before Spark makes it that join). An anti join's is "
              "not: a `NOT IN`'s right side decides by its NULLs and by being empty at all."]
    lines += ["", "| operator | a join key passes through |", "| --- | --- |"]
    lines += [f"| {op} | {how} |" for op, how in KEY_PASSAGE.items()]
    lines += ["| anything else (Limit, Sample, Expand, Generate, a Python UDF's node…) | "
              "stops |", "",
              "Determinism: a build side containing "
              + ", ".join(f"`{o}`" for o in sorted(ROW_DROPPING_OPERATORS))
              + " (unless it is a limit over a sort whose order decides it), a window "
              "function whose value depends on the order of ties, or a call to "
              + ", ".join(f"`{f}`" for f in sorted(RERUN_FUNCTIONS))
              + " is refused; a fact read below a nondeterministic operator is neither "
              "pruned nor listed by dpp.", "",
              "Worth a build: the build side must filter something — a selective predicate "
              "(any but `IS NOT NULL` alone), local rows, a limit or a sample — or, for a "
              "partition column, read at most 1 MiB of files: a table that small is read "
              "whole for its keys, which may be fewer than the fact's partitions (a lookup "
              "table of the days to keep, Trino's always-built filters); a larger one that "
              "filters nothing is taken to hold every key a star schema's foreign key can "
              "hold, and its job would prune nothing. An `IN (subquery)` or `EXISTS` is "
              "asked the same (Spark makes it a left-semi join). A build side that filters "
              "nothing may still be narrowed to "
              "the rows a filtered side matches: by its join's other keys (TPC-DS q72's "
              "second calendar, matched to the first one's weeks), or by a join above it "
              "that its own column reaches unchanged (q2's calendar inside a weekly "
              "aggregate, matched to one year's weeks), where that join keeps its side's "
              "rows only when matched. The optimizer hook and the Connect DataFrame rewrite "
              "build those as left-semi joins; SQL text writes them as `key IN (the filtered "
              "side's keys)` (one key pair; a narrowing by several is not written).", "",
              "Facts: a Parquet relation read by its files is a fact — pruned, and costly "
              "for a build side to scan — when it is partitioned, or when Spark would not "
              "broadcast it: its size (Spark's estimate) at least "
              "`spark.sql.autoBroadcastJoinThreshold` (10 MB when unset or off). One rule "
              "for every front end, on the facts each records.", "",
              RELATIONS_RULE]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":   # python -m dpp.analysis.rules > docs/rules.md
    print("# Pruning rules\n\nWhich side of a join dpp may prune, how a join key passes "
          "through operators on its way to the relation it reads, and what makes a side "
          "unrepeatable. The optimizer hook describes Spark's resolved plan as a typed plan "
          "(`dpp/analysis/plan_wire.py`); SQL text (`dpp/frontends/sql/typed.py`) and the Spark Connect "
          "client's plan (`dpp/frontends/connect/typed.py`) are translated into the same typed plan; "
          "`dpp.analysis.plan_pairs.find_prunes` applies these tables to it for all three. What follows "
          "is decided once too, by `dpp.runtime.decision.plan_loads` for the hook and the SQL text "
          "alike: which keys are worth a filter (a partition column's always; a data "
          "column's only when Parquet statistics or buckets can use it, and not from a build "
          "side that scans another fact unless `spark.dpp.statsPruning.enabled=true`), which "
          "build sides are one filter, and which reads share one listing. `dpp.join` "
          "reads the tables directly. `tests/test_rules_table.py` holds each front end to "
          "them.\n")
    print(rules_markdown(), end="")
