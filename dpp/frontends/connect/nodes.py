"""The nodes of a Spark Connect plan's typed plan while it is built: a column (:class:`Col`)
and a node with the columns known of it so far (:class:`Node`).

Plain data, shared by :mod:`dpp.frontends.connect.typed` (which builds them) and
:mod:`dpp.frontends.connect.setops` (its set operations and grouping sets); here, below both, so the
import arrows point one way (``connect_typed`` → ``connect_setops`` → this module).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Optional

__all__ = ["Col", "Node"]


class Col(NamedTuple):
    """An attribute: its id (an expression number), its name and the aliases qualifying it."""

    id: int
    name: str
    quals: frozenset


@dataclass(eq=False)
class Node:
    """A typed node being built: its columns so far, and how more may come up from below."""

    id: int
    op: str
    kids: list["Node"]
    rel: Any
    cols: list[Col] = field(default_factory=list)
    links: list["Node"] = field(default_factory=list)   # children unknown columns pass
    leaf_open: bool = False       # any column asked of it is one of its own
    alias: Optional[str] = None   # SubqueryAlias: its columns are qualified by it
    shadow: set[str] = field(default_factory=set)   # names its links do not pass up
    extra: dict[str, Any] = field(default_factory=dict)
    pids: dict[int, Optional["Node"]] = field(default_factory=dict)   # None: ambiguous
    ordered: bool = False   # cols are in Spark's output order (positions may be matched)

    def known(self, depth: int = 0) -> bool:
        """Whether ``cols`` is every column this node outputs (no open node below passes
        more up): only then may its columns be matched by position or by name set."""
        if self.leaf_open or depth > 400:
            return False
        return all(c.known(depth + 1) for c in self.links)

    def may_have(self, name: str, qual: Optional[str]) -> bool:
        """Whether a column not yet known may come out of this node by that name."""
        if self.leaf_open:
            return qual is None
        if name in self.shadow:
            return False
        if self.alias is not None:
            if qual is not None and qual != self.alias:
                return False
            qual = None
        return any(c.may_have(name, qual) for c in self.links)
