"""Fact/dimension pairs on a Spark logical plan, as the optimizer hook describes it.

The JVM rule (``dpp/jvm/src/dpp/spark/PlanDescriber.java``) sends the plan Spark is
optimizing as numbered nodes: join types and equi-join keys, projections and groupings that
pass a column through, union branches, top-level ``IN (subquery)`` conjuncts, partitioned
Parquet relations. This module decides, with no Spark in sight (so it is tested on its own):
which relation's partition column each join key reads, whether that side of the join may be
pruned, and which plan node is the build side. It follows Spark's own ``PartitionPruning``:
a key is traced down through Project / Filter / Aggregate (grouping keys) / Union / joins to
a partitioned relation; the pruned side must be one whose rows are needed only when they
match (inner, left-semi, the non-preserved side of an outer join); the other side is the
build side, and must filter something (a selective predicate, or local rows), or the filter
costs a job and prunes nothing.
"""
from __future__ import annotations

import dataclasses
import json

from dataclasses import dataclass
from typing import Any, Optional

from dpp.core.refusals import Code, Refusal
from dpp.core.spark_rules import broadcast_threshold
from dpp.analysis.plan_narrowing import narrowing_above, semi_narrowing
from dpp.analysis.rules import (KEY_PASSAGE, POSITIONAL_OPERATORS, build_side_unrepeatable,
                                decided_by_sort, is_fact, may_prune, unrepeatable)

__all__ = ["Prune", "find_prunes", "relation_nodes", "unstable_relations"]

# operators a key passes through (dpp.analysis.rules): the unary ones, traced below
_ROW_PRESERVING = set(KEY_PASSAGE) - {"Join"}
# a fact-side cast Spark adds to compare with a wider dimension key: every value the wider
# type holds that equals a fact value is that fact value, so the domain maps back exactly
_INTEGRAL = ["tinyint", "smallint", "int", "bigint"]
# leaves that hold local rows: a dimension made with createDataFrame, or cached
_LOCAL_LEAVES = {"LocalRelation", "LogicalRDD", "InMemoryRelation", "Range"}
# a filter built for the rows it removes (``Prune.rows_pay``) only from a build side reading
# at most this many bytes of files: its keys then come in one short job, few enough to be
# tested exactly per row; a larger one (TPC-DS customer_demographics, 384k keys) holds the
# query's planning for a domain too wide to state (a bloom filter's bounds)
ROWS_BUILD_BYTES = 4 << 20
# a build side that filters nothing is still built, for a partition column, when it reads at
# most this many bytes of files: a small table's keys are every key it holds, which may be
# fewer than the fact's partitions (a lookup table of the dates or regions to keep, a
# dimension missing some of the fact's keys), and one short task collects them. A larger one
# is taken to hold every key the fact's foreign key can hold (TPC-DS date_dim, 1.8 MB, at
# every scale) and is not built
WHOLE_BUILD_BYTES = 1 << 20
# ... and only when the join it spares reads at least this many times what Spark broadcasts
# (250 MB at Spark's default 10 MB): the shuffle and join of the rows removed must outweigh
# the build's fixed cost (measured: TPC-DS SF10 q72, its join with 678 MB of inventory, 2-3 s
# spared; SF1 q40 and q80, joins with 35-40 MB of returns, 0.6-1 s lost)
ROWS_JOIN_FACTOR = 25
# Spark's size of a relation it cannot measure (spark.sql.defaultSizeInBytes, Long.MAX_VALUE)
_UNKNOWN_SIZE = 1 << 62
# a comparison conjunct ``a op b`` read from the other operand's side: ``b flip(op) a``
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
# types whose domain keys order values as Spark's comparison does: integers, dates,
# timestamps, decimals (not strings, which collations order otherwise; not floating types,
# whose NaN Spark orders above every number; not booleans)
_ORDERED = {"tinyint", "smallint", "int", "bigint", "date", "timestamp", "timestamp_ntz"}


@dataclass(frozen=True)
class Prune:
    """Prune ``column`` of the relation at node ``relation`` by the values of expression
    ``build_expr`` over plan node ``build_node``."""

    relation: int
    column: str
    build_node: int
    build_expr: int
    build_type: str
    build_sql: str
    join: str           # the join type (or "IN subquery") that makes it sound
    # an expression key over partition columns (f.sid + 1, f.a + f.b, cast(f.k as double)):
    # Spark evaluates it on each partition's values and the loader tests the result;
    # ``column`` is then the first column it reads
    fact_expr: Optional[int] = None
    fact_refs: tuple[tuple[int, str], ...] = ()   # (attribute id, partition column) read
    fact_type: str = ""
    fact_sql: str = ""
    # ``column`` is a data column: the filter can only skip files by their Parquet statistics
    # (or a bucket column's buckets); whether that pays is the hook's call
    data: bool = False
    # the partitioned relations (other facts) the build side reads: costly for a data column
    build_facts: tuple[int, ...] = ()
    # a build side that filters nothing itself, narrowed by another key pair of its join:
    # (node on the probe side, ((build-side key expr, that node's key expr), ...)); the
    # build keeps only rows with a match there (TPC-DS q72: date_dim d2 by d1's weeks)
    build_semi: Optional[tuple[int, tuple[tuple[int, int], ...]]] = None
    # the build side reads files only (no local rows, cached data or declared table, no
    # IN-subquery): its plan and files identify its keys, so the filter cache may keep them
    build_cacheable: bool = False
    # Spark's own dynamic pruning would plan a filter by this build side: its side of the
    # join holds a filter Spark counts (``_Plan.spark_selective``). False: no keys of Spark's
    # can come for it, so the hook does not leave the build to them
    spark_selective: bool = True
    # a data column whose rows meet a join with another large relation (a shuffle join, in
    # Spark's plan by its own size estimate) before the join this pair stands for: rows the
    # filter removes are spared that join, whatever the Parquet statistics say (TPC-DS q72:
    # catalog_sales by its demographics, below its join with inventory on the item)
    rows_pay: bool = False
    # set by the decision (``ProbeKey.rows_only``): built for the rows alone, statistics
    # judged unable to skip files by it
    rows_only: bool = False
    # how the join compares ``column`` with the build key: ``=`` (its values), or ``<``,
    # ``<=``, ``>``, ``>=`` (a comparison conjunct: below the build key's maximum, above its
    # minimum; ``Domain.compared``)
    compare: str = "="
    # (relation node, data column): the build side is that relation's column, every row of
    # it (no filter of its own to build from); a comparison key then prunes by the column's
    # bounds over all the relation's files, read from their Parquet footers, no scan
    # (TPC-DS q72: inventory's quantity on hand below catalog_sales' largest quantity)
    stats_of: Optional[tuple[int, str]] = None

    @property
    def build(self) -> tuple[int, int, str]:
        """What the build side computes: node, key expression, narrowing (the JVM's ``semi``
        argument, a JSON object ``{"node": other, "keys": [b1, ...], "otherKeys": [a1, ...]}``:
        only rows some row of ``other`` matches on ``b_i = a_i``; empty without). A build
        by statistics (``stats_of``) is ``stats:<relation>:<column>`` there, never the
        JVM's."""
        if self.stats_of is not None:
            return self.build_node, self.build_expr, f"stats:{self.stats_of[0]}:{self.stats_of[1]}"
        semi = "" if self.build_semi is None else json.dumps({   # the schema's semiBuild
            "node": self.build_semi[0], "keys": [b for b, _a in self.build_semi[1]],
            "otherKeys": [a for _b, a in self.build_semi[1]]})
        return self.build_node, self.build_expr, semi

    @property
    def build_reads_fact(self) -> bool:
        return bool(self.build_facts)

    @property
    def columns(self) -> tuple[str, ...]:
        """The partition columns the fact-side key reads."""
        return tuple(c for _a, c in self.fact_refs) if self.fact_expr is not None \
            else (self.column,)


def _unrepeatable(node: dict[str, Any]) -> Optional[str]:
    """Why the node's own rows may differ per run (:func:`dpp.analysis.rules.unrepeatable` on the
    facts its front end recorded), or None."""
    return unrepeatable(node["op"], node.get("flagged"))


def relation_nodes(desc: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """Node id -> the relation description of every fact in the plan (:func:`_fact`)."""
    return {n["id"]: n["relation"] for n in desc["nodes"] if _fact(desc, n)}


def _fact(desc: dict[str, Any], node: dict[str, Any]) -> bool:
    """Whether a node is a relation that is a fact (:func:`dpp.analysis.rules.is_fact` on the
    facts its front end recorded): only those are pruned, and only those make a build side
    costly; any other relation is a leaf like a dimension's."""
    rel = node.get("relation")
    return bool(rel) and is_fact(bool(rel["partitionColumns"]), rel.get("sizeInBytes"),
                                 desc.get("broadcastThreshold"))


class _Plan:
    def __init__(self, desc: dict[str, Any]) -> None:
        self.broadcast = broadcast_threshold(desc.get("broadcastThreshold"))
        # every file relation's size, dimensions included (``nodes`` keeps facts' only)
        self.file_bytes = {n["id"]: (n["relation"] or {}).get("sizeInBytes")
                           for n in desc["nodes"] if n.get("relation")}
        self.nodes = {n["id"]: n if not n.get("relation") or _fact(desc, n)
                      else {k: v for k, v in n.items() if k != "relation"}
                      for n in desc["nodes"]}
        self.outputs = {i: [c[0] for c in n["output"]] for i, n in self.nodes.items()}
        self.parents: dict[int, list[int]] = {}
        for i, n in self.nodes.items():
            for c in self.below(i):
                self.parents.setdefault(c, []).append(i)
        self._above: dict[int, Optional[str]] = {}
        self._within: dict[int, Optional[str]] = {}
        self._files_only: dict[int, bool] = {}

    def below(self, node: int) -> list[int]:
        """A node's children and the plans of its IN-subqueries."""
        n = self.nodes[node]
        return list(n["children"]) + [s["query"] for s in n.get("inSubqueries", [])]

    def unstable_above(self, node: int) -> Optional[str]:
        """Why the rows coming out of the plan over ``node`` depend on which files it reads in
        what order (a nondeterministic expression, a sample, a limit not decided by a sort
        above it), or None. (A window function over tied rows is left open by Spark itself
        whatever is read: it does not stop pruning.) Pruning below such an operator
        changes its answer — fewer files are packed into other tasks, ``rand`` and
        ``monotonically_increasing_id`` are seeded per task — so nothing below is pruned, and
        nothing is listed in another order."""
        if node in self._above:
            return self._above[node]
        self._above[node] = None   # a cycle (a node shared by two parents) ends here
        why: Optional[str] = None
        for parent in self.parents.get(node, []):
            n = self.nodes[parent]
            why = _unrepeatable(n)
            if why and decided_by_sort(n["op"], n.get("flagged"), bool(n.get("ordered"))):
                why = None   # a limit a sort decides: the same rows from fewer files
            if not why:
                why = self.unstable_above(parent)
            if why:
                break
        self._above[node] = why
        return why

    def unstable_within(self, node: int, depth: int = 0) -> Optional[str]:
        """Why a build side's keys may differ when it is run again (in a clone of the
        session, in another layout): any nondeterministic expression, sample, limit or
        offset in it, ordered or not (ties), or a window function whose values depend on the
        order of ties, in its plan or in the plan of a subquery its expressions evaluate
        (``subqueries``); or None."""
        if depth > 200:
            return "a plan too deep to check"
        if node in self._within:   # every pair with this build side asks again
            return self._within[node]
        n = self.nodes[node]
        why = build_side_unrepeatable([n])
        if why is None:
            why = next((w for w in (self.unstable_within(c, depth + 1)
                                    for c in self.below(node) + n.get("subqueries", []))
                        if w), None)
        self._within[node] = why
        return why

    def trace(self, node: int, attr: int, depth: int = 0, data: bool = False,
              at: Optional[int] = None) -> Optional[list[tuple[int, str]]]:
        """(relation node, partition column) pairs the attribute ``attr`` of ``node`` reads,
        or None where it cannot be followed (a computed column, a data column, an operator
        through which filtering rows would change the answer). With ``data``, data columns of
        the relation count too: skipping files by a data column's values is a row filter on
        that column, sound below exactly the operators a partition column's is. With ``at``,
        the walk ends at that node instead (``[(at, "")]`` when ``attr`` reaches it unchanged;
        not through a union, whose branches name it otherwise)."""
        if depth > 200:
            return None
        if depth > 0 and len(self.parents.get(node, [])) > 1:
            # rows that go to two consumers (a CTE Spark keeps as one relation, used twice):
            # a key of one may not remove the rows the other needs
            return None
        if at is not None and node == at:
            return [(node, "")] if attr in self.outputs[node] else None
        n = self.nodes[node]
        op = n["op"]
        rel = n.get("relation")
        if op == "LogicalRelation":
            if rel is None:
                return None
            for exprid, name, _t in n["output"]:
                if exprid == attr:
                    if data or name.lower() in {c.lower() for c in rel["partitionColumns"]}:
                        return [(node, name)]
                    return None
            return None
        children = n["children"]
        if op == "Join":
            for c in children:
                if attr in self.outputs[c]:
                    return self.trace(c, attr, depth + 1, data, at)
            return None
        if op == "Union":
            if at is not None or attr not in self.outputs[node]:
                return None
            pos = self.outputs[node].index(attr)
            found: list[tuple[int, str]] = []
            for c in children:
                if pos >= len(self.outputs[c]):
                    return None
                sub = self.trace(c, self.outputs[c][pos], depth + 1, data)
                if sub is None:
                    return None
                found.extend(sub)
            return found
        if op not in _ROW_PRESERVING or len(children) != 1:
            return None
        child = children[0]
        if op in ("Project", "Aggregate"):
            src = {o: s for o, s in n.get("map", [])}.get(attr)
            return None if src is None else self.trace(child, src, depth + 1, data, at)
        if op == "Window" and attr not in n.get("partitionSpec", []):
            return None
        if attr not in self.outputs[child]:
            return None
        return self.trace(child, attr, depth + 1, data, at)

    def meets_large_join(self, rel: int, top: int) -> bool:
        """Whether the rows of relation ``rel`` pass a join below ``top`` (on the way up to
        it) whose other side reads files of at least :data:`ROWS_JOIN_FACTOR` times Spark's
        broadcast threshold (``sizeInBytes``, where Spark knows it): that join shuffles
        and joins every row of ``rel`` before ``top`` can drop it, so a filter of ``top``'s
        keys on ``rel``'s rows spares that work. A broadcast join below ``top`` costs a hash
        probe per row, as the filter would: no gain there (TPC-DS q22)."""
        node, steps = rel, 0
        while node != top and steps < 200:
            parents = self.parents.get(node, [])
            if len(parents) != 1:
                return False
            parent = self.nodes[parents[0]]
            if parent["id"] != top and parent["op"] == "Join" and len(parent["children"]) == 2:
                other = next((c for c in parent["children"] if c != node), None)
                if other is not None and self._heavy(self.relations_read(other)):
                    return True
            node, steps = parent["id"], steps + 1
        return False

    def small_build(self, node: int, limit: int = ROWS_BUILD_BYTES) -> bool:
        """Whether the subtree at ``node`` reads at most ``limit`` bytes of files (rows held
        locally count nothing; a leaf of unknown size is not small)."""
        total, todo, seen = 0, [node], set()
        while todo:
            i = todo.pop()
            if i in seen:
                continue
            seen.add(i)
            n = self.nodes[i]
            below = self.below(i)
            if not below:
                if i in self.file_bytes:
                    size = self.file_bytes[i]
                    if size is None:
                        return False
                    total += size
                elif n["op"] not in _LOCAL_LEAVES:
                    return False
            todo.extend(below)
        return total <= limit

    def worth_building(self, node: int) -> bool:
        """Whether a build side's keys are worth collecting for a partition column: it
        filters (:meth:`selective`), or it is small enough to read whole
        (:data:`WHOLE_BUILD_BYTES`), whatever keys it holds."""
        return self.selective(node) or self.small_build(node, WHOLE_BUILD_BYTES)

    def _heavy(self, rels: tuple[int, ...]) -> bool:
        """Whether relations ``rels`` read files of at least ``ROWS_JOIN_FACTOR`` times the
        broadcast threshold. A size Spark does not know (None, or its default for a
        partitioned catalog table without statistics, ``Long.MAX_VALUE``) counts nothing: a
        filter for the rows is built on known weight only."""
        sizes = (self.file_bytes.get(r) for r in rels)
        return sum(z for z in sizes if z is not None and z < _UNKNOWN_SIZE) \
            >= ROWS_JOIN_FACTOR * self.broadcast

    def spark_selective(self, node: int) -> bool:
        """Whether Spark's own dynamic pruning sees a filter in the subtree at ``node`` (its
        ``hasSelectivePredicate``: some ``Filter`` whose condition
        ``PartitionPruning.isLikelySelective`` accepts): Spark plans pruning by a join side
        only then. A filter that does not say (a plan from another front end, a jar without
        the test) or holds an IN subquery (Spark rewrites it to a join whose own filters it
        then sees) counts as one: the answer only decides whether to wait for Spark's keys."""
        todo, seen = [node], set()
        while todo:
            n = self.nodes[todo.pop()]
            if n["id"] in seen:
                continue
            seen.add(n["id"])
            if n["op"] == "Filter" and (n.get("sparkSelective", True)
                                        or n.get("inSubqueries")):
                return True
            todo.extend(n["children"])
        return False

    def selective(self, node: int, depth: int = 0) -> bool:
        """Whether a build side filters anything (else its filter admits every key, when
        the fact's keys all have a row there: the foreign key a star schema holds). An
        ``IN (subquery)`` is asked the same: Spark makes it a left-semi join first."""
        if depth > 200:
            return False
        n = self.nodes[node]
        if n["op"] == "Filter" and (n.get("selective") or n.get("inSubqueries")):
            return True
        if not n["children"] and n["op"] in _LOCAL_LEAVES:
            return True
        # a sample or a limit filters (the determinism rule refuses it, with a clearer reason
        # than "filters nothing")
        if n["op"] in POSITIONAL_OPERATORS:
            return True
        if n["op"] == "Join" and n.get("joinType") in ("INNER", "LEFT SEMI"):
            return any(self.selective(c, depth + 1) for c in n["children"])
        return any(self.selective(c, depth + 1) for c in n["children"])

    def relations_read(self, node: int, depth: int = 0) -> tuple[int, ...]:
        """The partitioned relations (facts) the subtree at ``node`` reads."""
        if depth > 200:
            return (node,)
        n = self.nodes[node]
        found = (node,) if n.get("relation") else ()
        for c in n["children"]:
            found += tuple(r for r in self.relations_read(c, depth + 1) if r not in found)
        return found

    def reads_files_only(self, node: int, depth: int = 0) -> bool:
        """Whether every leaf below ``node`` is a file relation dpp does not list itself
        (memoized: every pair sharing a build side asks again)."""
        if depth > 200:
            return False
        if node not in self._files_only:
            n = self.nodes[node]
            if n.get("inSubqueries"):
                ok = False
            elif not n["children"]:
                ok = (n["op"] == "LogicalRelation"
                      and (n.get("relation") or {}).get("kind") != "lazy")
            else:
                ok = all(self.reads_files_only(c, depth + 1) for c in n["children"])
            self._files_only[node] = ok
        return self._files_only[node]

    def is_partition_column(self, rel: int, column: str) -> bool:
        parts = self.nodes[rel]["relation"]["partitionColumns"]
        return column.lower() in {c.lower() for c in parts}


def _narrow(plan: _Plan, node: int, key: dict[str, Any]) -> int:
    """The smallest build side that still gives every value of ``key`` and still filters:
    below a join (of any type) the child that outputs the key's columns holds every value the
    join can output for it, so building over that child keeps more, never less (TPC-DS q72's
    date key: the filtered date_dim, not the join of inventory, warehouse and item above it)."""
    attrs = list(key.get("refs") or ([key["attr"]] if key.get("attr") is not None else []))
    if not attrs:
        return node
    for _ in range(200):
        n = plan.nodes[node]
        if n["op"] not in ("Join", "Project"):
            return node
        below = [c for c in n["children"] if all(a in plan.outputs[c] for a in attrs)]
        if len(below) != 1 or not plan.selective(below[0]):
            return node
        node = below[0]
    return node


def _expression_target(plan: _Plan, side: int, key: dict[str, Any]
                       ) -> Optional[tuple[int, tuple[tuple[int, str], ...]]]:
    """The one relation a deterministic key expression reads only partition columns of, with
    the (attribute, column) pairs it reads; None when it reads anything else (a data column,
    a computed column, two relations, a union's branches)."""
    refs = key.get("refs") or []
    if not refs or not key.get("deterministic", False):
        return None
    if any(r not in plan.outputs[side] for r in refs):
        return None
    rel: Optional[int] = None
    pairs = []
    for r in refs:
        traced = plan.trace(side, r)
        if not traced or len(traced) != 1:
            return None
        if rel is not None and traced[0][0] != rel:
            return None
        rel = traced[0][0]
        pairs.append((r, traced[0][1]))
    return None if rel is None else (rel, tuple(pairs))


def _fact_key(key: dict[str, Any]) -> Optional[int]:
    """The attribute a fact-side key reads, where the domain of the compared values maps back
    to the column's values exactly: the column itself, or an integral widening of it."""
    attr = key.get("attr")
    if attr is None:
        return None
    cast = key.get("cast")
    if cast is None:
        return attr
    src = key.get("from")
    if src in _INTEGRAL and cast in _INTEGRAL and _INTEGRAL.index(src) <= _INTEGRAL.index(cast):
        return attr
    return None


# the build key types a bound from Parquet statistics serves (``hive_splits.column_bounds``)
_STATS_BOUND = frozenset({"tinyint", "smallint", "int", "bigint", "date"})


def _stats_source(plan: _Plan, side: int, key: dict[str, Any]) -> Optional[tuple[int, str]]:
    """The (relation, data column) whose every value the build key ``key`` of join side
    ``side`` reads, for a bound from that relation's file statistics: the column itself (or
    an integral widening of it) traced down to one partitioned relation through operators
    that pass its values on (a value of the side is a value of the column, or NULL), of a
    type whose statistics order as its values. None otherwise."""
    attr = _fact_key(key)
    if attr is None or str(key.get("type", "")) not in _STATS_BOUND:
        return None
    if str(key.get("from") or key.get("type")) not in _STATS_BOUND:
        return None
    found = plan.trace(side, attr, data=True)
    if not found or len(found) != 1:
        return None
    rel, col = found[0]
    if plan.is_partition_column(rel, col):
        return None
    return rel, col


def _ordered(key: dict[str, Any]) -> bool:
    """Whether a comparison operand's type is one :data:`_ORDERED` (or a decimal)."""
    t = str(key.get("type", ""))
    return t in _ORDERED or t.startswith("decimal(")


def find_prunes(desc: dict[str, Any], refused: Optional[list[tuple[int, str, Refusal]]] = None
                ) -> tuple[list[Prune], list[Refusal]]:
    """Every sound (relation, column, build side) the plan offers, and the refusals of join
    keys that reach a partition column but cannot be used (subject: the key's SQL). Keys
    that reach a data column of a partitioned relation are offered too (``Prune.data``), for
    statistics and buckets. ``refused``, when given, receives ``(relation, column,
    refusal)`` for each column pair refused because its build side is not deterministic."""
    plan = _Plan(desc)
    out: list[Prune] = []
    notes: list[Refusal] = []
    seen: set[tuple[int, str, int, int]] = set()

    def unstable(rel: int, build_node: int, sql: Any, col: Optional[str] = None) -> bool:
        """Notes and refuses a pair whose probe or build side is not deterministic (an
        unpartitioned relation's refusals go unnoted: dpp never promised to prune it)."""
        why = plan.unstable_above(rel)
        if why:
            note = Refusal.of(Code.FACT_BELOW_NONDETERMINISTIC, sql, why=why)
        else:
            why = plan.unstable_within(build_node)
            if not why:
                return False
            note = Refusal.of(Code.BUILD_NONDETERMINISTIC, sql, why=why)
            if refused is not None and col is not None:
                refused.append((rel, col, note))
        if note not in notes and plan.nodes[rel]["relation"].get("partitionColumns"):
            notes.append(note)
        return True

    def add(targets: Optional[list[tuple[int, str]]], build_node: int, build_key: dict,
            how: str, semi: Optional[tuple[int, tuple[tuple[int, int], ...]]] = None,
            spark_side: Optional[int] = None, top: Optional[int] = None,
            compare: str = "=", stats_of: Optional[tuple[int, str]] = None) -> None:
        for rel, col in targets or []:
            if rel == build_node:
                continue
            if unstable(rel, build_node, build_key.get("sql", "?"), col):
                continue
            if semi is not None and unstable(rel, semi[0], build_key.get("sql", "?"), col):
                continue
            k = (rel, col.lower(), build_node, build_key["expr"], compare)
            if k in seen:
                continue
            seen.add(k)
            data = not plan.is_partition_column(rel, col)
            facts = () if stats_of is not None else plan.relations_read(build_node) + (
                plan.relations_read(semi[0]) if semi is not None else ())
            cacheable = plan.reads_files_only(build_node) and (
                semi is None or plan.reads_files_only(semi[0]))
            out.append(Prune(rel, col, build_node, build_key["expr"], build_key["type"],
                             build_key.get("sql", "?"), how, data=data,
                             build_facts=facts if data else (), build_semi=semi,
                             build_cacheable=cacheable,
                             spark_selective=plan.spark_selective(
                                 build_node if spark_side is None else spark_side),
                             rows_pay=(data and top is not None
                                       and plan.meets_large_join(rel, top)
                                       and plan.small_build(build_node)
                                       and (semi is None or plan.small_build(semi[0]))
                                       and compare == "=")
                             # a bound from statistics: a range test per row, and every row
                             # it removes is spared the join it stands for
                             or (data and stats_of is not None),
                             compare=compare, stats_of=stats_of))

    def add_expression(fact: dict, target: tuple[int, tuple[tuple[int, str], ...]],
                       build_node: int, build_key: dict, how: str) -> None:
        rel, pairs = target
        if rel == build_node:
            return
        if unstable(rel, build_node, fact.get("sql", "?")):
            return
        k = (rel, f"expr{fact['expr']}", build_node, build_key["expr"], "=")
        if k in seen:
            return
        seen.add(k)
        out.append(Prune(rel, pairs[0][1], build_node, build_key["expr"], build_key["type"],
                         build_key.get("sql", "?"), how, fact_expr=fact["expr"],
                         fact_refs=pairs, fact_type=fact["type"],
                         fact_sql=fact.get("sql", "?"),
                         build_cacheable=plan.reads_files_only(build_node)))

    def reads_only(key: dict, side: int) -> bool:
        return all(r in plan.outputs[side] for r in key.get("refs") or []) and (
            key.get("attr") is None or key["attr"] in plan.outputs[side])

    for node in plan.nodes.values():
        if node["op"] == "Join" and len(node["children"]) == 2:
            left, right = node["children"]
            how = node.get("joinType", "")
            for a, b in node.get("keys", []):
                for fact, dim, fact_side, dim_side, ok in (
                        (a, b, left, right, may_prune(how, "left")),
                        (b, a, left, right, may_prune(how, "left")),
                        (a, b, right, left, may_prune(how, "right")),
                        (b, a, right, left, may_prune(how, "right"))):
                    if not reads_only(fact, fact_side) or not reads_only(dim, dim_side):
                        continue
                    attr = _fact_key(fact)
                    targets = plan.trace(fact_side, attr) if attr is not None else None
                    expression = (_expression_target(plan, fact_side, fact)
                                  if not targets else None)
                    data = None
                    if not targets and expression is None and attr is not None:
                        data = plan.trace(fact_side, attr, data=True)
                    if not targets and expression is None and not data:
                        continue
                    rels = {r for r, _c in (targets or data or [])} or (
                        {expression[0]} if expression is not None else set())
                    semi = None
                    if ok and not plan.selective(dim_side):
                        semi = semi_narrowing(plan, node, fact_side, dim_side, fact, rels) \
                            or narrowing_above(plan, node["id"], dim_side, rels)
                    if data:   # a data column: statistics only, no notes about it
                        if ok and plan.selective(dim_side):
                            add(data, _narrow(plan, dim_side, dim), dim, how,
                                top=node["id"])
                        elif semi is not None:
                            add(data, dim_side, dim, how, semi, top=node["id"])
                        continue
                    if not ok:
                        notes.append(Refusal.of(Code.JOIN_KEEPS_UNMATCHED,
                                                fact.get("sql"), join=how))
                        continue
                    if semi is None and not plan.worth_building(dim_side):
                        notes.append(Refusal.of(Code.BUILD_FILTERS_NOTHING,
                                                fact.get("sql"), build=dim.get("sql")))
                        continue
                    if semi is not None:
                        if targets:
                            add(targets, dim_side, dim, how, semi)
                        continue   # an expression key is not narrowed this way
                    build = _narrow(plan, dim_side, dim)
                    if targets:
                        add(targets, build, dim, how, spark_side=dim_side)
                    else:
                        assert expression is not None
                        add_expression(fact, expression, build, dim, how)
            # comparisons: a row of the pruned side whose column lies beyond every value of
            # the build key (above its maximum for <, below its minimum for >) matches no row.
            # The column itself (or an integral widening of it), an ordered type on both
            # sides, the build side worth building as for an equi-key of the same column;
            # no narrowing and no expression keys
            for a, op, b in node.get("compares", []):
                for fact, fop, dim, fact_side, dim_side, ok in (
                        (a, op, b, left, right, may_prune(how, "left")),
                        (b, _FLIPPED[op], a, left, right, may_prune(how, "left")),
                        (a, op, b, right, left, may_prune(how, "right")),
                        (b, _FLIPPED[op], a, right, left, may_prune(how, "right"))):
                    if not ok or not reads_only(fact, fact_side) \
                            or not reads_only(dim, dim_side):
                        continue
                    attr = _fact_key(fact)
                    if attr is None or not _ordered(fact) or not _ordered(dim):
                        continue
                    found = plan.trace(fact_side, attr, data=True)
                    if not found:
                        continue
                    parts = [(r, c) for r, c in found if plan.is_partition_column(r, c)]
                    datas = [(r, c) for r, c in found if not plan.is_partition_column(r, c)]
                    if parts and plan.worth_building(dim_side):
                        add(parts, _narrow(plan, dim_side, dim), dim, how,
                            spark_side=dim_side, compare=fop)
                    elif parts:
                        source = _stats_source(plan, dim_side, dim)
                        if source is not None:
                            add(parts, dim_side, dim, how, compare=fop, stats_of=source)
                    if datas and plan.selective(dim_side):
                        add(datas, _narrow(plan, dim_side, dim), dim, how, top=node["id"],
                            compare=fop)
                    elif datas:
                        source = _stats_source(plan, dim_side, dim)
                        if source is not None:
                            add(datas, dim_side, dim, how, top=node["id"], compare=fop,
                                stats_of=source)
        elif node["op"] == "Filter":
            for sub in node.get("inSubqueries", []):
                value = sub["value"]
                child = node["children"][0]
                if not reads_only(value, child):
                    continue
                if not plan.worth_building(sub["query"]):
                    note = Refusal.of(Code.IN_FILTERS_NOTHING, value.get("sql"),
                                      build=sub["queryKey"].get("sql"))
                    if note not in notes:
                        notes.append(note)
                    continue
                attr = _fact_key(value)
                build = _narrow(plan, sub["query"], sub["queryKey"])
                targets = plan.trace(child, attr) if attr is not None else None
                if targets:
                    add(targets, build, sub["queryKey"], "IN subquery")
                    continue
                expression = _expression_target(plan, child, value)
                if expression is not None:
                    add_expression(value, expression, build, sub["queryKey"], "IN subquery")
                    continue
                data = plan.trace(child, attr, data=True) if attr is not None else None
                if data and plan.selective(sub["query"]):   # statistics: a filtered side only
                    add(data, build, sub["queryKey"], "IN subquery", top=node["id"])
    # a filter for the rows alone only on a relation dpp prunes by a partition column
    # anyway: wrapping one Spark would read whole for its rows alone cost more than it
    # spared (measured at SF1: TPC-DS q24 and q85, 1.5-4 s slower a query)
    # (a bound from file statistics on a data column is kept for its rows on any relation:
    # the decision keeps it only beside another key of the relation, ``ProbeKey.rider``)
    pruned = {p.relation for p in out if not p.data}
    out = [p if not p.rows_pay or p.relation in pruned or p.stats_of is not None
           else dataclasses.replace(p, rows_pay=False) for p in out]
    return out, notes


def unstable_relations(desc: dict[str, Any]) -> dict[int, str]:
    """Relation node -> why the plan's answer depends on the order in which its files are
    read (see ``_Plan.unstable_above``): such a relation is left to Spark entirely."""
    plan = _Plan(desc)
    out = {}
    for rel in relation_nodes(desc):
        why = plan.unstable_above(rel)
        if why:
            out[rel] = why
    return out
