"""The plan analysis every front end shares: which side of a join may be pruned and by what
(:mod:`~dpp.analysis.rules`, :mod:`~dpp.analysis.plan_pairs`), how a build side is narrowed
(:mod:`~dpp.analysis.plan_narrowing`), the typed plan's wire format
(:mod:`~dpp.analysis.plan_wire`), the pruning plan's types
(:mod:`~dpp.analysis.pruning_plan`), what SQL text calls (:mod:`~dpp.analysis.functions`)
and what kind of statement it is (:mod:`~dpp.analysis.statements`).

No Spark session, no file system: plans in, decisions out. Above :mod:`dpp.core`, below the
runtime and the front ends.
"""
