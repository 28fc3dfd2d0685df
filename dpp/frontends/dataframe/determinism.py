"""Whether a DataFrame gives the same rows when it is run again.

A build side handed over as a DataFrame (``dpp.join``'s dimension, a Connect DataFrame
join's dimension) is run twice: once by dpp to collect its keys, once inside the user's
join. Anything whose result depends on evaluation order or layout — ``rand``, a sample, a
limit, ``monotonically_increasing_id``, a nondeterministic UDF — can keep other keys the
second time, and pruning by the first run's keys then loses rows. Such a build side is not
used (the optimizer hook reads the same from Spark's own flags in ``PlanDescriber``).

On a classic session the DataFrame's analyzed plan is asked (Spark's ``deterministic`` on
every expression, and the operators that drop rows by position). On Spark Connect there is no
JVM in Python: the client's plan is read instead, conservatively
(:func:`dpp.frontends.connect.proto.dataframe_nondeterminism`).
"""
from __future__ import annotations

import json
from typing import Any, Optional

from dpp.analysis.rules import build_side_unrepeatable, unrepeatable

__all__ = ["nondeterminism"]

_MAX_NODES = 5000


def nondeterminism(df: Any) -> Optional[str]:
    """Why ``df`` may give other rows when run again, or None when it cannot."""
    jdf = getattr(df, "_jdf", None)
    if jdf is not None:
        return _classic(jdf)
    from dpp.frontends.connect.proto import dataframe_nondeterminism   # the Connect plan's reader

    return dataframe_nondeterminism(df)


def _classic(jdf: Any) -> Optional[str]:
    plan = jdf.queryExecution().analyzed()
    from dpp.runtime.jvm_build import loaded_hook

    hook = loaded_hook()
    if hook is not None:   # the describer's facts, node by node; dpp.analysis.rules decides
        return build_side_unrepeatable(json.loads(hook.nodeFacts(plan)))
    # no JVM part (no JDK to build it): Spark's expression flags and the positional operators
    if not plan.deterministic():
        return "a nondeterministic expression"
    stack = [plan]
    seen = 0
    while stack:
        p = stack.pop()
        seen += 1
        if seen > _MAX_NODES:
            return "a plan too large to check"
        why = unrepeatable(p.getClass().getSimpleName())
        if why is not None:
            return why
        kids = p.children()
        for i in range(kids.size()):
            stack.append(kids.apply(i))
    return None
