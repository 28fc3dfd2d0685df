"""``IN (subquery)`` and ``EXISTS`` in the typed plan (:mod:`dpp.frontends.sql.typed`): a ``Filter``'s
``inSubqueries`` entry, as Spark's rewrite to a left-semi join keys it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Protocol

from sqlglot import exp

from dpp.core.refusals import Code, Refusal
from dpp.frontends.sql.build import label
from dpp.analysis.pruning_plan import KEY_ALIAS
from dpp.frontends.sql.scopes import Scope, Source, conjuncts, refers_to

__all__ = ["Origin", "SemiJoins", "Translator"]


@dataclass
class Origin:
    """Where a key of the typed plan came from. ``phase`` orders a reference's filters as
    the query states them: 0 an equality of WHERE / ON, 1 a semi join's ON, 2 an
    ``IN`` / ``EXISTS``; ``index`` is the conjunct's place in its list."""

    scope: Scope
    conjunct: exp.Expression
    phase: int
    index: int
    column: Optional[exp.Column] = None      # an equality's column on this key's side
    source: Optional[Source] = None          # the FROM item that column is of
    query: Optional[exp.Expression] = None   # IN / EXISTS: the build query (sqlglot)
    name: str = ""                           # IN / EXISTS: the build side's label


class _Partners(Protocol):
    """The part of the typed plan (``dpp.frontends.sql.typed.Typed``) an IN / EXISTS adds to."""

    partners: dict[str, list[tuple[Source, str]]]


class Translator(Protocol):
    """What an IN / EXISTS translation uses of the whole query's translator: ``_Translator``
    of :mod:`dpp.frontends.sql.typed` implements it. Declared here, not imported from there, so the
    import arrow points one way: ``sql_typed`` builds on this module, never the reverse."""

    @property
    def typed(self) -> _Partners: ...

    def out(self, node: int) -> list[tuple[int, str]]: ...

    def query(self, q: exp.Expression) -> tuple[int, list[tuple[int, str]]]: ...

    def key(self, attr: int, sql: str, origin: Origin) -> dict[str, Any]: ...

    def note(self, src: Source, phase: int, index: int, refusal: Refusal) -> None: ...


class SemiJoins:
    """The IN / EXISTS part of one SELECT's translation (a mixin of ``_Select``)."""

    t: Translator
    sc: Optional[Scope]

    def attr(self, col: exp.Column) -> Optional[tuple[int, Source]]:   # pragma: no cover
        raise NotImplementedError

    def in_subquery(self, c: exp.Expression, child: int, index: int
                    ) -> Optional[dict[str, Any]]:
        col, body, name = self.semi_query(c, index)
        if col is None or body is None:
            return None
        found = self.attr(col)
        if found is None or found[0] not in {e for e, _n in self.t.out(child)}:
            return None
        attr, src = found
        qnode, qout = self.t.query(body)
        if not qout:
            return None
        origin = Origin(self.sc, c, 2, index, query=body, name=name)  # type: ignore[arg-type]
        qkey = self.t.key(qout[0][0], name, origin)
        value = self.t.key(attr, col.sql(dialect="spark"),
                           Origin(self.sc, c, 2, index, col, src))  # type: ignore[arg-type]
        self.t.typed.partners.setdefault(name, []).append((src, name))
        return {"query": qnode, "value": value, "queryKey": qkey}

    def semi_query(self, c: exp.Expression, index: int
                   ) -> tuple[Optional[exp.Column], Optional[exp.Expression], str]:
        """The outer column and the build query of ``col IN (query)`` or of an ``EXISTS``
        correlated by one equality; (None, None, "") for anything else (noted)."""
        sc = self.sc
        assert sc is not None
        if isinstance(c, exp.In) and c.args.get("query") is not None and \
                isinstance(c.this, exp.Column):
            sub = c.args["query"]
            body = sub.this if isinstance(sub, exp.Subquery) else sub
            found = self.attr(c.this)
            if found is None:
                return None, None, ""
            if not isinstance(body, exp.Query) or _correlated(body, found[1].alias):
                self.t.note(found[1], 2, index, Refusal(Code.CORRELATED_IN))
                return None, None, ""
            return c.this, body, label(body)
        if not isinstance(c, exp.Exists):
            return None, None, ""
        body = c.this.this if isinstance(c.this, exp.Subquery) else c.this
        if not isinstance(body, exp.Select):
            return None, None, ""
        for src in sc.sources.values():
            col, sub = self.exists(body, src, index)
            if col is not None:
                return col, sub, label(body)
        return None, None, ""

    def exists(self, body: exp.Select, p: Source, index: int
               ) -> tuple[Optional[exp.Column], Optional[exp.Expression]]:
        if _aggregates_without_group(body):
            self.t.note(p, 2, index, Refusal(Code.EXISTS_GLOBAL_AGGREGATE))
            return None, None
        where = body.args.get("where")
        if where is None:
            return None, None
        correlated = [cj for cj in conjuncts(where.this) if refers_to(cj, p.alias)]
        rest = [cj for cj in conjuncts(where.this) if not refers_to(cj, p.alias)]
        if len(correlated) != 1 or not isinstance(correlated[0], exp.EQ):
            if correlated:
                self.t.note(p, 2, index, Refusal(Code.EXISTS_NON_EQUALITY))
            return None, None
        a, b = correlated[0].this, correlated[0].expression
        if not (isinstance(a, exp.Column) and isinstance(b, exp.Column)):
            return None, None
        if refers_to(b, p.alias):
            a, b = b, a
        if not refers_to(a, p.alias) or refers_to(b, p.alias):
            return None, None
        sub = body.copy()   # (whether what is left filters anything is find_prunes' call)
        sub.set("where", exp.Where(this=exp.and_(*[x.copy() for x in rest])) if rest else None)
        for k in ("group", "having", "order", "limit", "offset", "qualify"):
            sub.set(k, None)
        sub.set("expressions", [exp.alias_(b.copy(), KEY_ALIAS)])
        sub.set("distinct", None)
        return a, sub


def _correlated(body: exp.Expression, alias: str) -> bool:
    inner_aliases = {(t.alias or t.name).lower() for t in body.find_all(exp.Table)}
    inner_aliases |= {(s.alias or "").lower() for s in body.find_all(exp.Subquery)}
    return alias not in inner_aliases and refers_to(body, alias)


def _aggregates_without_group(body: exp.Select) -> bool:
    if body.args.get("group") is not None:
        return False
    return any(isinstance(e.unalias(), exp.AggFunc) or any(True for _ in e.find_all(exp.AggFunc))
               for e in body.expressions)
