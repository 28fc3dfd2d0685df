"""Narrowing a build side that filters nothing to the rows a filtered side matches.

``find_prunes`` (:mod:`dpp.analysis.plan_pairs`) refuses a build side that filters nothing: its keys
are every key a star schema's foreign key can hold. Two shapes still give fewer keys, with
no loss: the join's other key pairs tie the build side to a filtered subtree of the probe
side (TPC-DS q72's second calendar), or a join above it requires one of its own columns to
match a filtered side (q2's calendar inside a weekly aggregate). The build is then the build
side left-semi joined to that subtree on those pairs: ``(node, ((build key expr, its key
expr), ...))``, the form ``Prune.build_semi`` carries to the JVM's ``buildDataset``, the
Connect rewrite and the report.
"""
from __future__ import annotations

from typing import Any, Optional, Protocol

from dpp.analysis.rules import KEY_PASSAGE, may_prune

__all__ = ["Plan", "semi_narrowing", "narrowing_above"]


class Plan(Protocol):
    """What a narrowing reads of the numbered plan :mod:`dpp.analysis.plan_pairs` walks (its ``_Plan``
    implements this). Declared here, not imported from there, so the import arrow points one
    way: ``plan_pairs`` calls this module, this module knows nothing of ``plan_pairs``."""

    nodes: dict[int, dict[str, Any]]
    outputs: dict[int, list[int]]
    parents: dict[int, list[int]]

    def trace(self, node: int, attr: int, depth: int = 0, data: bool = False,
              at: Optional[int] = None) -> Optional[list[tuple[int, str]]]: ...

    def selective(self, node: int, depth: int = 0) -> bool: ...

    def relations_read(self, node: int, depth: int = 0) -> tuple[int, ...]: ...

    def unstable_within(self, node: int, depth: int = 0) -> Optional[str]: ...

# operators a column's values pass through unchanged and whole, from one child (a union's
# output takes values from every branch; an aggregate or window may compute them)
_SAME_VALUES = {op for op, how in KEY_PASSAGE.items() if how == "unchanged"} | {"Project"}


def semi_narrowing(plan: Plan, join: dict[str, Any], fact_side: int, dim_side: int,
                   fact_key: dict[str, Any], relations: set[int]
                   ) -> Optional[tuple[int, tuple[tuple[int, int], ...]]]:
    """A build side that filters nothing (``d2``, all of date_dim) may still be narrowed by
    the join's other key pairs: ``d2.week = d1.week`` with ``d1`` filtered on the probe side.
    A probe row matches only a ``d2`` row whose week some row of ``d1``'s subtree has, so the
    keys of ``d2 ⋉ d1`` on those pairs hold every key the join can match. The subtree is the
    largest one on the probe side that outputs the other key's column unchanged and reads none
    of the relations to prune; it must filter, be deterministic and share no attribute with
    the build side. Returns (that node, ((build key expr, its key expr), ...)) or None."""
    found: Optional[int] = None
    pairs: list[tuple[int, int]] = []
    for a, b in join.get("keys", []):
        for other, mine in ((a, b), (b, a)):
            if other is fact_key or mine is fact_key:
                continue
            refs, mine_refs = _refs(other), _refs(mine)
            if len(refs) != 1 or not mine_refs or not other.get("deterministic", True):
                continue
            if not all(r in plan.outputs[dim_side] for r in mine_refs):
                continue
            node = _values_from(plan, fact_side, refs[0], relations)
            if node is None or (found is not None and node != found):
                continue
            found = node
            pairs.append((mine["expr"], other["expr"]))
    if found is None or not _narrows(plan, found, dim_side):
        return None
    return found, tuple(pairs)


def narrowing_above(plan: Plan, join: int, dim_side: int, relations: set[int]
                    ) -> Optional[tuple[int, tuple[tuple[int, int], ...]]]:
    """A build side that filters nothing (``date_dim`` joined to the sales inside TPC-DS
    q2's ``wswscs``) narrowed by a join above it: there ``wswscs.d_week_seq`` must match a
    filtered side (the outer ``date_dim`` of one year), and the week is the inner
    ``date_dim``'s own column, reaching that join unchanged (a grouping key). A fact row
    whose ``date_dim`` row has another week comes out of no row of the query, so the keys of
    ``date_dim ⋉ filtered side`` on the week hold every key the fact needs. The join above
    must keep its side's rows only when matched, the key reach it by the operators a key
    passes (:data:`dpp.analysis.rules.KEY_PASSAGE`), the filtered side be deterministic, read none of
    ``relations`` and share no attribute with the build side. Returns the
    ``semi_narrowing`` form or None."""
    below, cur = join, join
    for _ in range(50):
        parents = plan.parents.get(cur, [])
        if len(parents) != 1:
            return None
        cur = parents[0]
        n = plan.nodes[cur]
        if n["op"] != "Join" or len(n["children"]) != 2:
            below = cur
            continue
        side = "left" if n["children"][0] == below else "right"
        other = n["children"][1] if side == "left" else n["children"][0]
        if may_prune(n.get("joinType", ""), side):
            for a, b in n.get("keys", []):
                for mine, theirs in ((a, b), (b, a)):
                    attr = mine.get("attr")
                    theirs_refs = _refs(theirs)
                    if attr is None or _refs(mine) != [attr] or \
                            attr not in plan.outputs[dim_side] or not theirs_refs or \
                            not all(r in plan.outputs[other] for r in theirs_refs) or \
                            not theirs.get("deterministic", True):
                        continue
                    if plan.trace(below, attr, at=dim_side) is not None and \
                            not relations & set(plan.relations_read(other)) and \
                            _narrows(plan, other, dim_side):
                        return other, ((mine["expr"], theirs["expr"]),)
        below = cur
    return None


def _refs(key: dict[str, Any]) -> list[int]:
    """The attributes a key expression reads."""
    return list(key.get("refs") or ([key["attr"]] if key.get("attr") is not None else []))


def _narrows(plan: Plan, node: int, build: int) -> bool:
    """May ``node`` narrow the build side ``build``: it filters, is deterministic (the build
    runs it again) and shares no attribute with it (a self-join's two sides)."""
    return plan.selective(node) and not plan.unstable_within(node) and \
        not set(plan.outputs[node]) & set(plan.outputs[build])


def _values_from(plan: Plan, node: int, attr: int, relations: set[int]) -> Optional[int]:
    """The largest subtree below ``node`` that outputs ``attr`` with the values ``node``
    outputs for it and reads none of ``relations``; None when there is none."""
    for _ in range(200):
        if attr not in plan.outputs[node]:
            return None
        if not relations & set(plan.relations_read(node)):
            return node
        n = plan.nodes[node]
        if n["op"] == "Join":
            below = [c for c in n["children"] if attr in plan.outputs[c]]
        elif n["op"] in _SAME_VALUES and len(n["children"]) == 1:
            below = n["children"]
        else:
            return None
        if len(below) != 1:
            return None
        node = below[0]
    return None
