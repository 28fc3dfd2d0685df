"""The build sides of a Spark Connect DataFrame plan's pairs (part of
:mod:`dpp.frontends.connect.frames`): which pairs :func:`dpp.analysis.plan_pairs.find_prunes` found on the
plan's typed translation are used, and the DataFrame each build side runs.

A pair is (fact relation, column) ← (build node, build key), decided once for every front end
by :func:`~dpp.analysis.plan_pairs.find_prunes`. The Connect rewrite has no resolved plan to build
from, only the client's protobuf tree; so a pair is used only when each relation it names is
a real ``Relation`` message of that tree (a node the translation adds, such as
``unionByName``'s projection of a branch or the ``Expand`` of grouping sets, runs nothing of
its own) and each key column has a name that selects it from that relation alone:

* **A plain pair** builds ``build_relation.select(key)``, as before.
* **A narrowed pair** (``Prune.build_semi``, TPC-DS q72's ``date_dim d2`` by ``d1``'s weeks)
  builds ``build_relation ⋉ other_relation`` on the narrowing key pairs, then the key: the
  LEFT SEMI join the optimizer hook builds in the JVM (``DppHook.buildPlan``'s ``semi``).
  ``find_prunes`` has already proved it sound (the other node is on the probe side, outputs
  the other key with the values the join sees, reads none of the pruned relations, filters,
  is deterministic); an equality never matches NULL, so the semi join's ``==`` keeps exactly
  the build rows the join can match. Each side is projected to fresh names first, so the
  condition cannot be ambiguous when both sides read the same table.
* **A data-column pair** (``Prune.data``: Parquet statistics and buckets only) goes to
  :func:`dpp.frontends.dataframe.join.pruned_fact` like any other, once :func:`decide_data_pairs` (the shared
  :func:`dpp.runtime.decision.plan_loads`) has judged it worth a filter. It is judged here, before
  ``pruned_fact``, because only the typed plan knows which facts a build side scans (a costly
  build for a data column is refused unless ``statsPruning.enabled=true``), and because a read
  left with no filter worth building must be sent as built, not replaced by a view of all its
  files.
* **An expression key** over partition columns (``Prune.fact_expr``: ``f.day + 1 = d.k``) is
  not used: the loader evaluates such a key with Spark's own expression semantics, which the
  optimizer hook hands it from the resolved plan; the client has only the unresolved
  expression (types, casts and functions not yet resolved), so it could not be evaluated
  as Spark does.
"""
from __future__ import annotations

import functools
import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional

from dpp.frontends.connect.proto import all_relations
from dpp.frontends.connect.typed import TypedPlan, translate
from dpp.core.refusals import Code, Refusal

if TYPE_CHECKING:  # pragma: no cover
    from dpp.runtime.decision import Stats
    from dpp.runtime.report import JobReport
    from dpp.runtime.session_parts import SessionParts
    from dpp.analysis.plan_pairs import Prune
    from hive_splits import Table

__all__ = ["BuildSide", "FactRead", "Narrowing", "build_frame", "decide_data_pairs",
           "find_fact_joins", "read_key", "worth_by_policy", "worth_without_footers"]

FactOf = Callable[[Any], Optional[tuple[str, set[str], set[str]]]]


@dataclass(frozen=True)
class Narrowing:
    """The relation a build side is LEFT SEMI joined to, and the key pairs of that join:
    ``(build-side column, this relation's column)``, each as selectable from its own side."""

    relation: Any
    pairs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class BuildSide:
    """What a pair's filter is built from: ``relation`` (a copy: the tree is rewritten
    afterwards) and its key ``column``, narrowed by ``semi`` when given. ``data``: the fact
    column is a data column (statistics and buckets only); ``facts``: the partitioned dpp
    tables the build side scans (a data column's filter is then costly)."""

    relation: Any
    column: str
    data: bool = False
    semi: Optional[Narrowing] = None
    facts: tuple[str, ...] = ()

    def describe(self) -> str:
        """The key as the report's query text names it: ``d_day``, ``d_day ⋉ (d_week =
        d_week)`` when narrowed, with ``(data column)`` for a statistics-only key."""
        semi = "" if self.semi is None else " ⋉ ({})".format(
            " AND ".join(f"{b} = {a}" for b, a in self.semi.pairs))
        return self.column + semi + (" (data column)" if self.data else "")


@dataclass
class FactRead:
    """A ``Read`` relation of a fact, and the key pairs joins above it prune it by:
    ``(fact column, build side, build column as the join names it)``."""

    read: Any                                  # the Relation message (replaced in place)
    name: str                                  # the table's name in dpp
    pairs: list[tuple[str, BuildSide, str]] = field(default_factory=list)
    key: Any = None                            # (plan_id, serialized read)
    refused: Optional[Refusal] = None          # why a partition key's build side was refused


def read_key(rel: Any) -> tuple[Optional[int], bytes]:
    """A read by ``plan_id`` and content (one DataFrame used twice shares both)."""
    return (rel.common.plan_id if rel.HasField("common") else None,
            rel.read.SerializeToString())


def _copy(rel: Any) -> Any:
    import pyspark.sql.connect.proto as proto

    out = proto.Relation()
    out.CopyFrom(rel)
    return out


def _build_side(typed: TypedPlan, p: "Prune") -> Optional[BuildSide]:
    """The build side of pair ``p``, or None when a relation it names is not a message of
    the tree or a key column has no name to select it by (the pair is then not used)."""
    rel = typed.relations.get(p.build_node)
    name = typed.build_column(p.build_node, p.build_expr)
    if rel is None or name is None:
        return None
    semi = None
    if p.build_semi is not None:
        node, pairs = p.build_semi
        other = typed.relations.get(node)
        if other is None or not pairs:
            return None
        names = []
        for mine, theirs in pairs:
            b, a = typed.build_column(p.build_node, mine), typed.build_column(node, theirs)
            if b is None or a is None:
                return None
            names.append((b, a))
        semi = Narrowing(_copy(other), tuple(names))
    facts = tuple(sorted({typed.facts[r][0] for r in p.build_facts if r in typed.facts}))
    return BuildSide(_copy(rel), name, data=p.data, semi=semi, facts=facts)


def find_fact_joins(root: Any, fact_of: FactOf) -> list[FactRead]:
    """The fact reads under ``root`` with the join keys that prune them
    (:mod:`dpp.frontends.connect.frames`), as :func:`dpp.analysis.plan_pairs.find_prunes` decides on the plan's
    typed translation (:mod:`dpp.frontends.connect.typed`).

    ``fact_of(read)``: ``(name, columns, partition columns)`` (lower case) of the dpp table
    a ``Read`` message reads whole, or None. Pairs on partition columns and on data columns
    (``BuildSide.data``) are kept, plain or narrowed (module docstring); a fact whose only
    partition pairs were refused for a build side that is not deterministic comes with no
    pairs and ``refused`` saying why. The build column is as the join names it (``d.k`` for
    an alias-qualified key), to be selected from the build side."""
    from dpp.analysis.plan_pairs import find_prunes

    if not any(r.WhichOneof("rel_type") == "join" for r in all_relations(root)):
        return []   # no join, no pairs: no table looked up
    known: dict[bytes, Optional[tuple[str, set[str], set[str]]]] = {}

    def fact_name(read: Any) -> Optional[tuple[str, set[str], set[str]]]:
        key = read.SerializeToString()
        if key not in known:
            known[key] = fact_of(read)
        return known[key]

    typed = translate(root, fact_name)
    if not typed.facts:
        return []
    refused: list[tuple[int, str, Refusal]] = []
    prunes, _notes = find_prunes(typed.message, refused)   # type: ignore[arg-type]
    found: dict[Any, FactRead] = {}

    def entry(node: int) -> FactRead:
        read = typed.relations[node]
        key = read_key(read)
        if key not in found:
            found[key] = FactRead(read, typed.facts[node][0], key=key)
        return found[key]

    for p in prunes:
        if p.fact_expr is not None:   # an expression key: Spark's semantics (docstring)
            continue
        build = _build_side(typed, p)
        if build is not None:
            entry(p.relation).pairs.append((p.column, build, build.column))
    for rel, col, note in refused:   # a partition key's refusal, said even when a data
        if col.lower() in typed.facts[rel][2] and entry(rel).refused is None:  # key prunes
            entry(rel).refused = note
    return list(found.values())


def decide_data_pairs(fact: FactRead, table: "Table", stats: "Stats"
                      ) -> tuple[list[tuple[str, BuildSide, str]], list[str]]:
    """The pairs of ``fact`` worth a filter, by :func:`dpp.runtime.decision.plan_loads` (the decision
    the optimizer hook and the SQL text take), and its notes. A partition column's pair is
    always worth it; a data column's only where ``stats`` (a constant, or the session's
    policy) says its statistics can pay, or it is the table's bucket column, and not from a
    build side scanning another fact unless statistics pruning is ``true``."""
    from dpp.runtime.decision import Probe, ProbeKey, plan_loads, real_column

    if not any(b.data for _c, b, _n in fact.pairs):
        return list(fact.pairs), []
    keys = tuple(ProbeKey(build=i, column=real_column(table, c) or c, data=b.data,
                          build_facts=b.facts if b.data else ())
                 for i, (c, b, _n) in enumerate(fact.pairs))
    decided = plan_loads([Probe(ref=fact.name, table=table, label=fact.name,
                                table_key=fact.name, keys=keys)], stats)
    kept = {k.build for load in decided.loads for _p, ks in load.members for k in ks}
    return [pair for i, pair in enumerate(fact.pairs) if i in kept], list(decided.notes)


def _stats_for(table: "Table", stats: "Stats") -> "Stats":
    """``stats`` as it applies to ``table`` on Spark Connect: nothing for a catalog table's
    data columns (Spark reads its kept partitions whole, no files to skip)."""
    from dpp.runtime.connect_handoff import no_stats_on_connect_catalog
    from dpp.runtime.remote_catalog import is_connect_catalog

    return no_stats_on_connect_catalog(stats) if is_connect_catalog(table) else stats


def worth_without_footers(session: "SessionParts", facts: list[FactRead], cfg: Any
                          ) -> tuple[list[FactRead], list[str]]:
    """The facts left with a pair worth a filter where that is known without reading a
    footer (:func:`decide_data_pairs`): a data column's pair on a catalog table, or with
    ``statsPruning.enabled`` ``true``/``false``; and the decision's notes. A plan left with
    nothing is sent as built with no report, as a plan with no pair is; ``auto`` is judged
    by :func:`worth_by_policy` once the action has a report to record the footers' verdict."""
    from dpp.runtime.remote_catalog import is_connect_catalog

    kept: list[FactRead] = []
    notes: list[str] = []
    for fact in facts:
        table = (session.catalog.table(fact.name, {})
                 if any(b.data for _c, b, _n in fact.pairs) else None)
        if table is not None and (is_connect_catalog(table) or cfg.stats_pruning != "auto"):
            fact.pairs, why = decide_data_pairs(
                fact, table, _stats_for(table, cfg.stats_pruning == "true"))
            notes.extend(n for n in why if n not in notes)
        if fact.pairs or fact.refused:
            kept.append(fact)
    return kept, notes


def worth_by_policy(session: "SessionParts", fact: FactRead, table: "Table", cfg: Any,
                    report: "JobReport") -> list[tuple[str, BuildSide, str]]:
    """The pairs of ``fact`` worth a filter by the session's statistics policy (for
    ``auto``, a verdict from a sample of footers, read on the client). With none left the
    read is reported and sent as built: a view of every file would only cost a listing and
    hide the table from Spark."""
    if not any(b.data for _c, b, _n in fact.pairs):
        return list(fact.pairs)
    policy = session.runtime.stats_policy(cfg, report)
    chosen, notes = decide_data_pairs(fact, table, _stats_for(table, policy))
    report.analysis_notes.extend(n for n in notes if n not in report.analysis_notes)
    if not chosen:
        report.add_table_unpruned(fact.name, None, Refusal.of(
            Code.FRAME_SENT_AS_BUILT, why="no filter worth building (its keys are data "
            "columns, whose statistics spark.dpp.statsPruning.enabled judged unable to pay "
            "here)"))
    return chosen


# ====================================================================== running a build side

class _Relation:
    """A Connect ``LogicalPlan`` over an existing Relation message (a build side: the other
    side of a join, as the user built it)."""

    def __init__(self, rel: Any) -> None:
        from pyspark.sql.connect.plan import LogicalPlan

        self._rel = rel
        self.__class__ = type("_RelationPlan", (_Relation, LogicalPlan), {})
        LogicalPlan.__init__(self, None)  # type: ignore[arg-type]

    def plan(self, session: Any) -> Any:
        return _copy(self._rel)


def build_frame(build: BuildSide, spark: Any, key: str) -> Any:
    """The DataFrame of ``build``'s key values, as one column named ``key``: the build
    relation's key column, LEFT SEMI joined to the narrowing relation when there is one.

    Both sides are first projected to fresh names (``__dpp_semi_b<i>`` / ``_a<i>``): the two
    relations may read the same table (q72's two date_dim), and a condition on their own
    names could be ambiguous or resolve to the wrong side."""
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

    from dpp.core.remote import functions_for

    F = functions_for(spark)
    df = ConnectDataFrame(_Relation(build.relation), spark)
    if build.semi is None:
        return df.select(F.col(build.column).alias(key))
    pairs = build.semi.pairs
    left = df.select(F.col(build.column).alias(key),
                     *[F.col(b).alias(f"__dpp_semi_b{i}") for i, (b, _a) in enumerate(pairs)])
    right = ConnectDataFrame(_Relation(build.semi.relation), spark).select(
        *[F.col(a).alias(f"__dpp_semi_a{i}") for i, (_b, a) in enumerate(pairs)])
    cond = functools.reduce(operator.and_, [F.col(f"__dpp_semi_b{i}") == F.col(f"__dpp_semi_a{i}")
                                            for i in range(len(pairs))])
    return left.join(right, cond, "left_semi").select(key)
