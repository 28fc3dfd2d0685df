"""Merging build partials into one filter: union, then the collapse policy.

Both backends use :class:`PartialMerger`. It counts each part index once (so a retried or
speculative task attempt that publishes again changes nothing), checks each partial against the
registered key types, and unions partials in batches: a balanced tree of unions per column
instead of folding one by one into an ever larger set, which keeps 10,000 small partials cheap.

Per column, exact value sets are unioned first and collapsed with :meth:`Domain.simplify`
(with the same bloom capacity the build tasks use, so the resulting bloom can be OR-ed with the
tasks' blooms), then blooms and ranges are added. Each step is a ``Domain.union``: the result
is sound whatever the order, the order only keeps it tighter.
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

from dpp.core.policy import CollapsePolicy
from dpp.core.domain import DataType, Domain, TupleDomain
from dpp.core.errors import DomainError

__all__ = ["PartialMerger", "PartialRejected", "tree_union", "union_exact"]

_BATCH = 1024


class PartialRejected(Exception):
    """A partial that does not belong to the filter (wrong columns or types)."""


def tree_union(doms: Sequence[Domain]) -> Domain:
    """The union of ``doms`` by a balanced tree (``doms`` not empty)."""
    level = list(doms)
    while len(level) > 1:
        nxt = [level[i].union(level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def union_exact(doms: Sequence[Domain]) -> Domain:
    """The union of exact value-set domains (kinds ``values``/``none``) of one type, in one
    pass over a Python set: the same result as folding :meth:`Domain.union`, without building
    an intermediate domain per partial."""
    if len(doms) <= 2:
        return tree_union(doms)
    t = doms[0].type
    values: set = set()
    null = False
    for d in doms:
        if d.type != t:
            raise DomainError(f"cannot combine domains of types {t} and {d.type}")
        values.update(d.discrete_values() or ())
        null = null or d.null_allowed
    if t.is_floating and any(v != v for v in values):   # NaN: one is enough
        values = {v for v in values if v == v} | {float("nan")}
    return Domain.values(t, values, null_allowed=null)


class PartialMerger:
    """Accumulates one filter's partials; not thread-safe (callers hold their own lock)."""

    def __init__(self, key_types: Mapping[str, DataType], *, max_distinct: int,
                 bloom_fpp: Optional[float], bloom_capacity: Optional[int] = None) -> None:
        self.key_types = dict(key_types)
        self.policy = CollapsePolicy.of(max_distinct, bloom_fpp, bloom_capacity)
        self.max_distinct = self.policy.max_distinct
        self.bloom_fpp = self.policy.bloom_fpp
        self.bloom_capacity = self.policy.bloom_capacity
        self.parts: set[int] = set()
        self._merged: Optional[TupleDomain] = None    # None: no non-NONE partial yet
        self._pending: list[TupleDomain] = []

    def check(self, part_index: int, td: TupleDomain) -> None:
        """Raises :class:`PartialRejected` when ``td`` cannot be a partial of this filter."""
        if isinstance(part_index, bool) or not isinstance(part_index, int) or part_index < 0:
            raise PartialRejected(f"part index {part_index!r} is not a non-negative integer")
        if not isinstance(td, TupleDomain):
            raise PartialRejected(f"part {part_index}: expected a TupleDomain, got "
                                  f"{type(td).__name__}")
        doms = td.domains
        if doms is None or not self.key_types:
            return
        for name, d in doms.items():
            want = self.key_types.get(name)
            if want is None:
                raise PartialRejected(f"part {part_index}: column {name!r} is not a key of this "
                                      f"filter ({sorted(self.key_types)})")
            if d.type != want:
                raise PartialRejected(f"part {part_index}: column {name!r} is {d.type}, the "
                                      f"filter registered {want}")

    def add(self, part_index: int, td: TupleDomain) -> bool:
        """Adds a checked partial; False when this part index had already reported."""
        if part_index in self.parts:
            return False
        self.parts.add(part_index)
        if not td.is_none():
            self._pending.append(td)
            if len(self._pending) >= _BATCH:
                self._compact()
        return True

    def _compact(self) -> None:
        if not self._pending:
            return
        tds, self._pending = self._pending, []
        prev = self._merged
        cols = set(tds[0].columns) if prev is None else set(prev.columns)
        for td in tds:
            cols &= set(td.columns)     # a column unconstrained anywhere is unconstrained
        out: dict[str, Domain] = {}
        for c in sorted(cols):
            d = self._merge_column([td.get(c) for td in tds])  # type: ignore[misc]
            if prev is not None:
                d = self._simplify(prev.get(c).union(d))  # type: ignore[union-attr]
            out[c] = d
        self._merged = TupleDomain.of(out)

    def _simplify(self, d: Domain) -> Domain:
        return self.policy.simplify(d)

    def _merge_column(self, doms: list[Domain]) -> Domain:
        exact = [d for d in doms if d.kind in ("values", "none")]
        blooms = [d for d in doms if d.kind == "bloom"]
        rest = [d for d in doms if d.kind not in ("values", "none", "bloom")]
        acc: Optional[Domain] = self._simplify(union_exact(exact)) if exact else None
        for group in (blooms, rest):
            if group:
                g = tree_union(group)
                acc = g if acc is None else acc.union(g)
                acc = self._simplify(acc)
        assert acc is not None
        return acc

    def result(self) -> TupleDomain:
        """The merged filter so far: NONE while no part had rows, collapsed by policy."""
        try:
            self._compact()
        except DomainError as exc:  # pragma: no cover - types were checked on add
            raise PartialRejected(f"partials cannot be merged: {exc}") from None
        if self._merged is None:
            return TupleDomain.none()
        doms = self._merged.domains or {}
        return TupleDomain.of({c: self._simplify(d) for c, d in doms.items()})
