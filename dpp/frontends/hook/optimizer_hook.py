"""Dynamic pruning for every query Spark optimizes: DataFrames, views, writes, commands.

``dpp.enable(spark)`` on a classic session installs a rule in Spark's optimizer (the JVM part
in ``dpp/jvm/src``, compiled by :mod:`dpp.runtime.jvm_build`) and registers this module's
:class:`OptimizerHook` as its bridge, through PySpark's py4j callback server (as
``foreachBatch`` does). The rule describes each plan that joins a partitioned Parquet relation
(:mod:`dpp.analysis.plan_pairs` decides what to prune); the hook registers the dynamic filters, starts
their build sides (Spark's own aggregation over the dimension's plan, in a clone of the
session without adaptive execution so that each is one job that keeps its place in Spark's
FIFO queue, on threads marked so the rule leaves them alone) and starts a split loader per
pruned relation, then answers once the build sides' jobs are submitted: planning and building
overlap, as in Trino. Every relation is Spark's: a declared path table is Spark's reader of
its folder, and a relation with nothing to prune is left to Spark entirely (a declared one is
named in the report). When Spark scans, the relation's file index asks for its files; the
loader, which has been waiting on the filter service (bounded by ``spark.dpp.waitTimeout``),
answers with what it ruled out, and Spark's own listing less that is what the scan reads. A
relation pruned by a data column's filter waits for its load in the rule instead, so the build
values reach Parquet's row groups as a filter above it (:mod:`dpp.frontends.hook.row_filters`). One job report per executed query, written
when its last pruned relation has been listed.

Threads: the rule calls in on the optimizing thread; ``listFiles`` on whatever thread plans
the scan (AQE stage threads, broadcast threads, subqueries). Every call reaches Python on the
callback server's threads, and every wait here is bounded; the JVM side bounds its own wait
too and, with no answer in time, lets the base index list (no pruning, never a stuck query).
``DataFrame.explain()`` starts nothing: :func:`explaining` marks the thread, and a plan
explained and then executed starts its build sides on its first listing.
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import json
import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Hashable, Mapping, Optional

from dpp.core.domain import DataType, Domain, TupleDomain
from dpp.core.errors import ConfigError
from dpp.core.spark_compat import session_conf
from dpp.core.spark_rules import SparkRules
from dpp.core.refusals import Code, Refusal
from collectors.native import under_broadcast_threshold
from dpp.runtime.decision import Probe, ProbeKey, plan_loads, real_column
from dpp.runtime.filter_runs import INTERNAL, FilterRuns, FilterSpec
from dpp.frontends.hook.explain import ExplainListener, explaining, patch_explain
from dpp.frontends.hook.request import Request
from dpp.frontends.hook.answers import (build_label, catalog_answer, encode, plan_text, probe_type,
                              probe_type_of, pruning_text, ruled_out, users_site)
from dpp.frontends.hook.bridge import Bridge
from dpp.frontends.hook.row_filters import row_filters_for
from dpp.frontends.hook.sessions import refused_settings_report, served_session
from dpp.frontends.hook.tables import RelationTables, handoff_relation, plain_path
from dpp.runtime.jvm_build import HookUnavailable, load_into
from dpp.analysis.plan_pairs import Prune, find_prunes, relation_nodes, unstable_relations
from dpp.analysis.plan_wire import WIRE_VERSION, WireError, check_list_answer, check_plan
from dpp.runtime.report import JobReport
from hive_splits import DynamicFilter, KeyExpression, LoadResult, SplitLoader, Table
from hive_splits.column_bounds import column_bounds
from hive_splits.kept_files import kept_files
from hive_splits.listing import LocalLister, PrelistedLister

if TYPE_CHECKING:
    from dpp.runtime.session_parts import SessionParts

__all__ = ["OptimizerHook", "HookUnavailable", "explaining", "patch_explain", "INTERNAL"]

log = logging.getLogger(__name__)

_STALE_SECONDS = 900.0   # a plan optimized and never scanned (cache lookups, abandoned plans)
_KEPT_ANSWERS = 64       # listing answers kept for copies of a relation listed later
_POOL_THREADS = 16       # a request's pool bound (threads start only when needed)
_SUBMIT_WAIT = 5.0       # how long the rule waits for a started build side to reach Spark


@dataclass
class _Notes:
    """Where the statistics policy writes its verdicts (a report's ``analysis_notes``)."""

    analysis_notes: list[str]


class OptimizerHook:
    """The Python side of the optimizer rule for one DppSession (see the module docstring)."""

    def __init__(self, session: "SessionParts") -> None:
        from pyspark.java_gateway import ensure_callback_server_started

        self.session = session
        spark = session.spark
        self._jvm_hook = load_into(spark)
        # the per-query static calls as py4j members: an attribute of a class handle is a
        # reflection round trip each time it is read
        self._build_signature = self._jvm_hook.buildSignature
        self._build_dataset = self._jvm_hook.buildDataset
        ensure_callback_server_started(spark.sparkContext._gateway)
        self._bridge = Bridge(self)
        self._lock = threading.Lock()
        self._requests: dict[str, Request] = {}
        self._by_token: dict[str, Request] = {}
        self.tables = RelationTables(session)
        # answers by token, for copies of a relation Spark lists separately (no reuse)
        self._answers: dict[str, tuple[float, dict[str, Any]]] = {}
        self._scopes: dict[str, Request] = {}   # Spark execution id -> its open request
        self._explain = ExplainListener()   # what explained plans decided, for explain()
        self._jvm_hook.install(spark._jsparkSession, self._bridge)

    def serve_all(self) -> None:
        """Answers every session of this driver that has no hook of its own (the sessions a
        Spark Connect server makes per client), each by its own settings."""
        self._jvm_hook.installServer(self.session.spark._jsparkSession, self._bridge)

    def close(self) -> None:
        try:
            self._jvm_hook.uninstall(self.session.spark._jsparkSession)
        except Exception:  # pragma: no cover - the JVM is gone
            log.debug("uninstalling the optimizer hook failed", exc_info=True)
        with self._lock:
            requests = list(self._requests.values())
            self._requests.clear()
            self._by_token.clear()
            self._scopes.clear()
        for r in requests:
            r.runs.__exit__(None, None, None)

    # ------------------------------------------------------------------ the rule's call
    def on_plan(self, msg: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        session = self.session
        self._drop_stale()
        check_plan(msg)   # a message of another build: Spark's plan, the reason logged
        try:
            cfg, rules, connect = self._settings(msg)
        except ConfigError as exc:   # a served session's own bad value: said, Spark's plan
            self._refuse_settings(msg, exc)
            return {"wrap": {}}
        if not cfg.enabled:
            return {"wrap": {}}
        rels = relation_nodes(msg)
        if any(handoff_relation(r) for r in rels.values()):
            # the SQL-text path's rewritten query (it pruned already, and reports it)
            return {"wrap": {}}
        prunes, refusals = find_prunes(msg)
        notes: list[str] = []   # the statistics policy's verdicts
        usable = []
        for p in prunes:
            if p.fact_expr is not None and probe_type_of(p.fact_type) is None:
                refusals.append(Refusal.of(Code.KEY_NOT_ATOMIC, p.fact_sql, type=p.fact_type))
                continue
            usable.append(p)
        prunes = usable
        pruned_rels = {p.relation for p in prunes}
        unstable = unstable_relations(msg)   # pruned by no one (find_prunes refused them)
        whole_rels = [i for i, r in rels.items()
                      if i not in pruned_rels and i not in unstable
                      and self._declared(r)]
        if not prunes and not whole_rels and not refusals:
            return {"wrap": {}}
        nodes = {n["id"]: n for n in msg["nodes"]}
        scope = msg.get("scope")   # Spark's execution id: the optimizer runs of one query
        # a build side bounded by a relation's file statistics: only where the files Spark's
        # scan reads are known (``_bound_source``)
        sources: dict[int, Optional[tuple[Optional[Table], str, bool]]] = {}
        for p in prunes:
            if p.stats_of is not None and p.stats_of[0] not in sources:
                sources[p.stats_of[0]] = self._bound_source(rels.get(p.stats_of[0]),
                                                            nodes[p.stats_of[0]], cfg, rules)
        prunes = [p for p in prunes if p.stats_of is None or sources[p.stats_of[0]]]
        by_rel: dict[int, list[Prune]] = {}
        for p in prunes:
            by_rel.setdefault(p.relation, []).append(p)
        unpruned: list[tuple[str, Refusal]] = []
        probes: list[Probe] = []
        for rel_id, ps in by_rel.items():
            table, name, why = self.tables.table_for(rels[rel_id], nodes[rel_id], ps,
                                                     cfg, rules)
            if table is None:
                if any(not p.data for p in ps):
                    unpruned.append((name, why or Refusal(Code.NOT_LISTABLE)))
                continue
            probes.append(Probe(
                ref=rel_id, table=table, label=name,
                # a declared folder's kept-partition index names its folders: only scans of
                # one index (one token) may share a load, whose answer names kept folders
                table_key=(f"{plain_path(table.location)}|{name}|"
                           f"{rels[rel_id].get('folderNames') or ''}"),
                keys=tuple(ProbeKey(build=p.build, column=real_column(table, p.column)
                                    or p.column, data=p.data,
                                    build_facts=tuple(_relation_name(rels.get(r, {}))
                                                      for r in p.build_facts),
                                    expr=None if p.fact_expr is None else p.fact_sql,
                                    rows=(_STATS_ROWS if p.stats_of is not None
                                          else True) if p.rows_pay and cfg.row_group_filter
                                    else False,
                                    rider=p.stats_of is not None and p.data,
                                    payload=p)
                           for p in ps if not p.data or probe_type(table, p) is not None)))
        loads = plan_loads(probes, self._stats(cfg, notes),
                           lambda build: build if str(build[2]).startswith("stats:")
                           else int(self._build_signature(msg["request"], *build,
                                                          scope or msg["request"])))
        notes.extend(n for n in loads.notes if n not in notes)
        shapes: dict[int, str] = {}
        targets: dict[int, tuple[Table, str, list[Prune]]] = {}
        for load in loads.loads:
            for probe, keys in load.members:
                shapes[probe.ref] = load.key
                targets[probe.ref] = (probe.table, probe.label,
                                      [dataclasses.replace(k.payload, rows_only=True)
                                       if k.rows_only else k.payload for k in keys])
        whole_rels += [probe.ref for probe in loads.idle
                       if self._declared(rels[probe.ref])]  # keys none worth a filter
        for rel_id in whole_rels:   # a declared table dpp leaves whole: the report says so
            unpruned.append((self.tables.registered_at(self._root(rels[rel_id])).name,
                             Refusal(Code.NOTHING_TO_PRUNE)))
        if msg.get("explain"):
            self._explain.record(targets.values(), unpruned,
                                 [r.words() for r in refusals] + notes)
        if not targets and not prunes and not notes and not refusals:
            return {"wrap": {}}
        if not targets:   # nothing to wrap: the report says why (refusals, unusable tables)
            with self._lock:
                open_request = self._scopes.get(scope) if scope else None
            if open_request is not None and not open_request.done:
                for name, why in unpruned:   # a later run of a query that prunes elsewhere
                    open_request.report.add_table_unpruned(name, None, why)
                return {"wrap": {}}
            if msg.get("explain"):   # an explain runs nothing: its decisions are its text
                return {"wrap": {}}
            report = JobReport.start(query_text=plan_text(msg, prunes), kind="plan",
                                     settings=cfg.as_settings(), enabled=True)
            report.connect_session = connect
            report.refuse(refusals)
            report.analysis_notes.extend(notes)
            for name, why in unpruned:
                report.add_table_unpruned(name, None, why)
            self._finish(report, cfg)
            return {"wrap": {}}
        signature = loads.identity
        with self._lock:
            request = self._scopes.get(scope) if scope else None
        if request is not None:
            with request.lock:
                new_builds = {signature[p.build]
                              for _t, _n, ps in targets.values() for p in ps} - set(request.builds)
                new_shapes = set(shapes.values()) - set(request.shapes)
                if request.done or not request.fits(len(new_builds) + len(new_shapes)):
                    request = None
                else:
                    # a later optimizer run of the same query: its notes join the report
                    # (the first run's plan text stays the report's)
                    request.report.refuse(refusals)
                    request.report.analysis_notes.extend(
                        n for n in notes if n not in request.report.analysis_notes)
        if request is None:
            report = JobReport.start(query_text=plan_text(msg, prunes), kind="plan",
                                     settings=cfg.as_settings(), enabled=True)
            report.connect_session = connect
            report.refuse(refusals)
            report.analysis_notes.extend(notes)
            for name, why in unpruned:
                report.add_table_unpruned(name, None, why)
            capacity = max(_POOL_THREADS, 2 * (len(signature) + len(targets)) + 1)
            runs = FilterRuns(session.spark, session.runtime.filter_service(cfg), cfg, rules,
                              capacity, session.runtime.env_notes, session.runtime.filter_memory)
            request = Request(report=report, runs=runs, capacity=capacity, scope=scope,
                              cfg=cfg)
        else:
            for name, why in unpruned:
                request.report.add_table_unpruned(name, None, why)
        wrap, new_filters, describe = self._extend(request, msg, targets, signature, shapes,
                                                   cfg, rules, sources)
        with self._lock:
            self._requests[request.report.query_id] = request
            for token in request.tokens:
                self._by_token[token] = request
            if scope:
                self._scopes[scope] = request
                while len(self._scopes) > _KEPT_ANSWERS:
                    self._scopes.pop(next(iter(self._scopes)))
        row_filters: dict[str, list[dict[str, Any]]] = {}
        phases = request.report.phases
        if not msg.get("explain"):
            request.ensure_started()
            # the rule's own time while Spark waits: analysis, then the build sides' submission
            # and the row filters' wait for their loads (each run of the query adds its share)
            planned = time.perf_counter()
            phases["analysis"] = phases.get("analysis", 0.0) + planned - started
            self._await_submitted(request, new_filters, min(_SUBMIT_WAIT, cfg.wait_timeout))
            submitted = time.perf_counter()
            phases["submit"] = phases.get("submit", 0.0) + submitted - planned
            if cfg.row_group_filter:
                row_filters = row_filters_for(request, nodes, targets, wrap, cfg)
                phases["row_filter_wait"] = (phases.get("row_filter_wait", 0.0)
                                             + time.perf_counter() - submitted)
        else:
            request.report.analysis_notes.append("planned during an explain: build sides "
                                                 "start on the first scan")
            request.relabel = lambda site, msg=msg, prunes=prunes: plan_text(
                {**msg, "callSite": site}, prunes)
        return {"wrap": wrap, "timeout": cfg.wait_timeout, "rowFilters": row_filters,
                "describe": describe}

    def _extend(self, request: Request, msg: dict[str, Any],
                targets: dict[int, tuple[Table, str, list[Prune]]],
                signature: Mapping[Hashable, Hashable], shapes: dict[int, str],
                cfg: Any, rules: SparkRules,
                sources: Optional[dict[int, Optional[tuple[Optional[Table], str, bool]]]] = None
                ) -> tuple[dict[str, str], list[str], dict[str, str]]:
        """Adds this run's filters and relations to ``request``: a build side or a relation
        shape the request already has is shared (one filter, one load, one token), the rest
        start with the request. Returns the token per relation node, the new filters, and per
        relation node what Spark's scan description says dpp prunes it by."""
        runs = request.runs
        qid = request.report.query_id[:8]
        wrap: dict[str, str] = {}
        describe: dict[str, str] = {}
        new_filters: list[str] = []
        # how many relations each build side prunes in this run: one left to Spark's keys
        # must be one relation's (the keys are its scan's)
        uses: dict[Hashable, int] = {}
        for _t, _n, ps in targets.values():
            for sig in {signature[p.build] for p in ps}:
                uses[sig] = uses.get(sig, 0) + 1
        deferred: dict[Hashable, str] = {}   # build signature -> partition column
        # build signature -> (prune, its kept load's token): the bounds from file statistics
        # this run starts
        bounds: dict[Hashable, tuple[Prune, dict[str, Optional[str]]]] = {}
        with request.lock:
            for table, name, ps in targets.values():
                for p in ps:
                    sig = signature[p.build]
                    if sig in request.builds:
                        # a build shared with a relation of an earlier run: Spark's keys for
                        # one scan would not answer both, so it runs (after its deferral,
                        # if that is still queued: actions run in order)
                        request.add(lambda fid=request.builds[sig].filter_id:
                                    runs.start_deferred(fid))
                        continue
                    if p.stats_of is not None:
                        source = (sources or {}).get(p.stats_of[0])
                        label = source[1] if source else "?"
                        spec = FilterSpec(filter_id=f"{qid}-o{len(request.builds) + 1}",
                                          build_label=f"{label}.{p.stats_of[1]} (its files' "
                                                      f"statistics)",
                                          probe_type=probe_type(table, p), probe_label=name)
                        request.builds[sig] = spec
                        # Spark's plan of the build side, made now (the request's plan is
                        # held for this call): its relations name the files they read
                        frame = (self._build_frame(msg["request"], p, semi="")
                                 if source is not None and not source[2] else None)
                        # the load whose kept partitions bound the key instead of every
                        # partition (``_kept_load``): decided below, once the loads have
                        # their tokens, before any of this runs
                        bound: dict[str, Optional[str]] = {"token": None}
                        bounds[sig] = (p, bound)
                        request.add(lambda spec=spec, bound=bound, p=p, source=source,
                                    frame=frame:
                                    runs.start_computed(
                                        spec, "dpp_key", DataType.parse(p.build_type),
                                        lambda: self._bound(frame, source, p, cfg, rules,
                                                            request, bound["token"])))
                        continue
                    spec = FilterSpec(filter_id=f"{qid}-o{len(request.builds) + 1}",
                                      build_label=build_label(msg, p),
                                      probe_type=probe_type(table, p), probe_label=name,
                                      cache_plan=p.build_cacheable)
                    request.builds[sig] = spec
                    frame = self._build_frame(msg["request"], p)
                    column = real_column(table, p.column) or p.column
                    # left to Spark's keys only where Spark's own pruning is on and sees a
                    # filter on the build's side of the join (else none can come, and the
                    # build would only start later, at the listing), and not with the filter
                    # cache on (its filters serve a query at planning; dpp's builds fill it)
                    # Nor for a relation that also gets a row filter: the rule waits for
                    # its load (row_filters_for) before Spark may list, and the keys only
                    # come at that listing
                    row_waits = cfg.row_group_filter and any(q.data for q in ps)
                    if not (cfg.spark_keys and not cfg.filter_cache and rules.dynamic_pruning
                            and not row_waits and p.spark_selective
                            and p.fact_expr is None and p.compare == "=" and uses[sig] == 1
                            and column.lower() in {n.lower() for n in table.partition_names}
                            and under_broadcast_threshold(frame, unknown=False)):
                        column = None
                    if column is not None:
                        deferred[sig] = column
                        request.add(lambda spec=spec, frame=frame:
                                    runs.defer(spec, lambda: frame, key="dpp_key"))
                        continue
                    new_filters.append(spec.filter_id)
                    request.add(lambda spec=spec, frame=frame:
                                runs.start(spec, lambda: frame, key="dpp_key"))
            for rel_id, (table, name, ps) in targets.items():
                token = request.shapes.get(shapes[rel_id])
                if token is None:
                    token = request.shapes[shapes[rel_id]] = f"{qid}-{uuid.uuid4().hex[:6]}"
                    request.tokens[token] = (table, name)
                    if not ps:
                        request.whole.add(token)
                    filters = []
                    for p in ps:
                        spec = request.builds[signature[p.build]]
                        if signature[p.build] in deferred:
                            request.spark_keyed.setdefault(token, []).append(
                                (spec.filter_id, deferred[signature[p.build]]))
                        key = (None if p.fact_expr is None
                               else self._key_expression(msg["request"], table, p))
                        filters.append((spec.filter_id, p, key))
                    request.add(lambda token=token, table=table, filters=filters:
                                self._submit_load(request, token, table, filters, cfg))
                wrap[str(rel_id)] = token
            for sig, (p, bound) in bounds.items():
                source = (sources or {}).get(p.stats_of[0])
                # only where dpp lists the relation's files at the query (a catalog table, a
                # declared folder): a Spark reader's files are the ones it listed when made
                # (the label stays "its files' statistics": the files are the kept
                # partitions' only when the load names their folders, known at the bound)
                bound["token"] = (_kept_load(p, targets, wrap, request)
                                  if source is not None and source[0] is not None and source[2]
                                  else None)
            for rel_id, (table, name, ps) in targets.items():
                describe[str(rel_id)] = pruning_text(
                    table, [(p, request.builds[signature[p.build]].build_label) for p in ps])
        return wrap, new_filters, describe

    def _await_submitted(self, request: Request, filter_ids: list[str], bound: float) -> None:
        """Returns once each started build side has a Spark job (or is over), at most
        ``bound`` seconds: the rule then lets Spark run the query, whose jobs get later ids.

        Spark's scheduler runs jobs in the order of their ids (FIFO); a build side runs in
        one job (``DppHook.buildSession``: no adaptive stages), so with its job submitted
        first, all its stages run before the query's scans, which are what wait for it."""
        if not filter_ids:
            return
        from collectors import job_group_id
        from hive_splits.jvm_refs import jvm_static

        sc = self.session.spark.sparkContext
        # one round trip a look (dpp.spark.BuildSide), else the tracker's ids group by group
        lacking = jvm_static(sc._jvm, "dpp.spark.BuildSide", "withoutJobs")
        tracker = sc.statusTracker() if lacking is None else None
        groups = {fid: job_group_id(fid) for fid in filter_ids}
        deadline = time.monotonic() + bound
        pending = list(filter_ids)
        # each look at Spark's tracker walks every job it keeps (a thousand by default): the
        # pause between looks doubles, 5 ms to 40 ms, a build's job usually being submitted
        # within the first few
        pause = 0.005
        while True:
            live = []
            for fid in pending:
                future = request.runs.build_future(fid)
                if future is not None and not future.done():
                    live.append(fid)
            if lacking is not None and live:
                text = str(lacking(sc._jsc, "\n".join(groups[f] for f in live)))
                without = set(text.split("\n")) if text else set()
                pending = [f for f in live if groups[f] in without]
            else:
                pending = [f for f in live if not list(tracker.getJobIdsForGroup(groups[f]))]
            if not pending or time.monotonic() >= deadline:
                break
            # back at once when a build is over (a cache hit takes milliseconds), else poll
            # Spark's tracker again
            futures = [f for f in map(request.runs.build_future, pending) if f is not None]
            cf.wait(futures, timeout=pause, return_when=cf.FIRST_COMPLETED)
            pause = min(pause * 2, 0.04)
        if pending:
            log.info("dpp: build sides %s had no Spark job after %.1f s; the query starts "
                     "anyway", pending, bound)

    def _submit_load(self, request: Request, token: str, table: Table,
                     filters: list[tuple[str, Prune, Optional[KeyExpression]]], cfg: Any
                     ) -> None:
        runs = request.runs
        deadline = time.monotonic() + cfg.wait_timeout
        # left to Spark's keys: they come when Spark lists this scan, however late
        keyed = {fid for fid, _col in request.spark_keyed.get(token, [])}
        dyn = []
        for filter_id, p, key in filters:
            if key is not None:
                dyn.append(DynamicFilter(filter_id=filter_id, column=p.fact_sql,
                                         wait=runs.waiter(filter_id, p.fact_sql, deadline),
                                         expression=key))
                continue
            col = real_column(table, p.column) or p.column
            # a bound from file statistics lists a whole table: worth a short wait only
            until = (deadline if p.stats_of is None
                     else min(deadline, time.monotonic() + STATS_BOUND_WAIT))
            dyn.append(DynamicFilter(filter_id=filter_id, column=col,
                                     wait=runs.waiter(filter_id, col, until, p.compare),
                                     open_deadline=filter_id in keyed,
                                     rows_only=p.rows_only))
        request.loads[token] = runs.submit(self._load, table, dyn, cfg, request.runs.rules)

    # ------------------------------------------------------------------ explain
    def explain(self, query: str) -> list[str]:
        """What the hook decides for ``query`` (:class:`~dpp.frontends.hook.explain.ExplainListener`)."""
        return self._explain.explain(self.session, query)

    def _settings(self, msg: dict[str, Any]) -> tuple[Any, SparkRules, Optional[dict[str, str]]]:
        """The settings a plan is answered by: this hook's session's, or, for a session it
        serves without having made it (a Connect server's), that session's own
        (:mod:`dpp.frontends.hook.sessions`), with the Connect operation it runs for."""
        about = msg.get("session")
        if about is None:
            spark = self.session.spark
            every = session_conf(spark)   # one reading of the session for both
            return self.session.config_from(every), SparkRules.from_spark(spark, every), None
        served = served_session(about)
        return served.config, served.rules, served.connect

    def _refuse_settings(self, msg: dict[str, Any], exc: ConfigError) -> None:
        """A session served by this hook set a ``spark.dpp.*`` value dpp cannot read: its
        query keeps Spark's plan (the hook cannot fail it), and a report under the server's
        settings names the key and the value, with the Connect session it came from."""
        if not msg.get("explain"):
            report = refused_settings_report(msg, exc, self.session.config)
            log.warning("dpp: %s", report.error)
            self._finish(report, self.session.config)

    @staticmethod
    def _root(rel: dict[str, Any]) -> str:
        roots = rel.get("rootPaths") or []
        return plain_path(roots[0]) if len(roots) == 1 else ""

    def _declared(self, rel: dict[str, Any]) -> bool:
        """Whether a relation is a declared table's (Spark's reader of its folder): one dpp
        leaves whole is named in the query's report, so a job over declared tables always
        says what dpp did. Every relation with nothing to prune is Spark's, listed by Spark
        (a catalog table by its own catalog index; ``spark.dpp.listWholeCatalogTables`` is
        the SQL-text path's). Spark's own dynamic pruning still applies on top."""
        root = self._root(rel)
        return (rel.get("kind") == "path" and bool(root)
                and self.tables.registered_at(root) is not None)

    def _stats(self, cfg: Any, notes: list[str]) -> Any:
        """``statsPruning`` for :func:`dpp.runtime.decision.plan_loads`: a constant, or for ``auto``
        the session's policy, made (and its verdicts noted) only when a data column asks."""
        flag = {"true": True, "false": False}.get(cfg.stats_pruning)
        if flag is not None:
            return flag
        holder = _Notes(notes)
        policy: Any = None

        def ask(table: Table, column: str) -> bool:
            nonlocal policy
            if policy is None:
                policy = self.session.runtime.stats_policy(cfg, holder)
            return bool(policy) if isinstance(policy, bool) else bool(policy(table, column))
        return ask

    def _build_frame(self, request: str, p: Prune, semi: Optional[str] = None) -> Any:
        """Spark's plan of ``p``'s build side (``semi``: its narrowing, default ``p``'s)."""
        from pyspark.sql import DataFrame

        spark = self.session.spark
        node, expr, own = p.build
        return DataFrame(self._build_dataset(request, node, expr,
                                             own if semi is None else semi), spark)

    def _key_expression(self, request: str, table: Table, p: Prune) -> KeyExpression:
        """The fact-side key of ``p`` as the loader evaluates it: Spark's own evaluation of
        the expression (``dpp.spark.KeyEvaluator``) on each partition's folder texts."""
        gateway = self.session.spark.sparkContext._gateway
        refs = gateway.new_array(gateway.jvm.long, len(p.fact_refs))
        for i, (attr, _col) in enumerate(p.fact_refs):
            refs[i] = attr
        evaluator = self._jvm_hook.keyEvaluator(request, p.fact_expr, refs)
        columns = tuple(real_column(table, c) or c for _a, c in p.fact_refs)

        def evaluate(rows: list[list[Optional[str]]]) -> list[Any]:
            answers = json.loads(evaluator.evaluate(json.dumps(rows)))
            return [RuntimeError(a["error"]) if isinstance(a, dict) else a for a in answers]

        return KeyExpression(columns=columns, type=DataType.from_catalog(p.fact_type),
                             evaluate=evaluate)

    def _load(self, table: Table, dyn: list[DynamicFilter], cfg: Any, rules: SparkRules
              ) -> LoadResult:
        s = self.session
        lister = s.runtime.lister(table.location, cfg)
        if isinstance(table.lister, PrelistedLister):
            lister = table.lister.over(lister)   # the index's folders, the session's lister
        return SplitLoader(table, TupleDomain.all(), dyn, wait_timeout=cfg.wait_timeout,
                           rules=rules, lister=lister,
                           files_by_spark=True, **s.runtime.loader_stats(cfg)).load()

    # ------------------------------------------------------------------ the index's call
    def _bound_source(self, rel: Optional[dict[str, Any]], node: dict[str, Any], cfg: Any,
                      rules: SparkRules) -> Optional[tuple[Optional[Table], str, bool]]:
        """The table whose files bound a build key, its name, and whether dpp lists its files
        itself; None: no bound. dpp lists a catalog table's partitions (the catalog's, as
        Spark lists them at the query) and a declared folder's (those its index knows,
        ``folderNames``). Any other relation's files are the ones Spark's own index listed
        (``Dataset.inputFiles``, no listing again): a folder Spark's reader listed when the
        DataFrame was made, which dpp's own listing may not match, or a table without
        partitions. A partitioned catalog table dpp cannot list gets no bound (Spark would
        list all its partitions with a job)."""
        if not rel:
            return None
        try:
            table, name, why = self.tables.table_for(rel, node, [], cfg, rules)
        except Exception as exc:   # noqa: BLE001 - Spark's own listing names the files
            log.debug("dpp: %s not listed by dpp: %s", rel, exc)
            table, why = None, None
        if table is not None and why is None:
            return table, name, table.is_catalog or isinstance(table.lister, PrelistedLister)
        if rel.get("kind") == "catalog" and rel.get("partitionColumns"):
            return None
        # a relation dpp does not list (a table without partitions): Spark's listing
        name = rel.get("table") or ",".join(rel.get("rootPaths") or []) or "?"
        return None, self.tables.display_name(name) if rel.get("table") else name, False

    def _bound(self, frame: Any, source: Optional[tuple[Optional[Table], str, bool]], p: Prune,
               cfg: Any, rules: SparkRules, request: Optional[Request] = None,
               kept: Optional[str] = None) -> tuple[Optional[Domain], str]:
        """The build key's domain from the statistics of every file of the source table:
        from its smallest to its largest value of column ``p.stats_of[1]`` (none: no
        non-NULL value), or None and why. ``kept``: the token of the source relation's own
        load in ``request`` (``_kept_load``): the files of the partitions it keeps, once it
        is over, instead of every file; a load late or failed falls back to every file."""
        if source is None or p.stats_of is None:
            return None, "no table to bound the key by"
        table, name, listed = source
        column = (real_column(table, p.stats_of[1]) if table is not None else None) \
            or p.stats_of[1]
        s = self.session
        if dict(rules.reading).get("spark.sql.parquet.fieldId.read.enabled",
                                   "false").strip().lower() == "true":
            # Spark then finds a column by its field id, not by the name the footers give
            return None, "no bound from file statistics: Parquet field ids are read"
        if table is None:
            lister: Any = LocalLister()   # Spark's listing names local files only here
        else:
            lister = s.runtime.lister(table.location, cfg)
            if isinstance(table.lister, PrelistedLister):
                lister = table.lister.over(lister)
        files = (_kept_files(request, kept, table, lister)
                 if kept is not None and request is not None and table is not None else None)
        if files is None and listed and table is not None:
            # every file, listed now, as Spark's scan reads them
            result = SplitLoader(table, TupleDomain.all(), [], wait_timeout=cfg.wait_timeout,
                                 rules=rules, lister=lister, files_by_spark=False).load()
            files = [f for entries in result.listings.values() for f in entries]
        elif files is None:
            files, why = _spark_files(frame)
            if files is None:
                return None, f"no bound from the statistics of {name}.{column}: {why}"
        bounds, why = column_bounds(files, column, p.build_type, lister.read_footer,
                                    s.runtime.footers, max_workers=lister.footer_workers)
        if bounds is None:
            return None, f"no bound from the statistics of {name}.{column}: {why}"
        key_type = DataType.parse(p.build_type)
        if bounds.empty:
            return Domain.none(key_type), ""
        return Domain.range(key_type, bounds.low, bounds.high), ""

    @staticmethod
    def _answer_deferred(request: Request, token: str, spark_keys: dict[str, Any]) -> None:
        """The builds left to Spark's keys for this relation's scan: answered by the values
        of Spark's own dynamic pruning filters on their column (several on one column: their
        common values, as Spark applies them all), else started now."""
        for filter_id, column in request.spark_keyed.pop(token, []):
            found = [f for c, fs in spark_keys.items() if c.lower() == column.lower()
                     for f in fs]
            types = {f["type"] for f in found}
            answered = False
            if found and len(types) == 1:
                common = set(found[0]["values"])
                for f in found[1:]:
                    common &= set(f["values"])
                answered = request.runs.publish_spark_keys(filter_id, types.pop(),
                                                           sorted(common))
            if not answered:
                request.runs.start_deferred(filter_id)

    def on_list(self, token: str, call_site: Optional[str] = None,
                spark_keys: Optional[dict[str, Any]] = None) -> dict[str, Any]:
        with self._lock:
            request = self._by_token.get(token)
            kept = self._answers.get(token)
        if request is None:
            if kept is not None:   # another copy of a relation already listed (not reused)
                return kept[1]
            return {"status": "none", "version": WIRE_VERSION, "reason": "unknown token"}
        with request.lock:
            request.list_started.setdefault(token, time.perf_counter())
        relabel, request.relabel = request.relabel, None
        if relabel is not None and users_site(call_site):
            try:   # planned by an explain, run by this action: named where it ran
                request.report.query_text = relabel(call_site)
            except Exception as exc:  # noqa: BLE001 - a name is never worth a failed listing
                log.debug("dpp: report not renamed: %s", exc)
        request.ensure_started()
        self._answer_deferred(request, token, spark_keys or {})
        cfg = request.cfg
        table, name = request.tokens[token]
        try:
            result: LoadResult = request.loads[token].result(timeout=cfg.wait_timeout + 60.0)
        except Exception as exc:
            request.report.add_table_unpruned(name, None,
                                              Refusal.of(Code.LOADER_FAILED, error=exc))
            self._listed(request, token)
            return {"status": "none", "version": WIRE_VERSION, "reason": str(exc)[:300]}
        t0 = time.perf_counter()
        answer: dict[str, Any]
        if table.is_catalog:   # Spark's catalog index lists, restricted to what dpp kept
            answer = {"status": "ok", "version": WIRE_VERSION,
                      "catalog": catalog_answer(table, result),
                      "prunedFolders": [], "droppedFiles": {}}
        else:
            answer = {"status": "ok", "version": WIRE_VERSION,
                      "partitions": encode(table, result), **ruled_out(table, result)}
        try:
            check_list_answer(answer)
        except WireError as exc:   # never sent: the index would read less than Spark's
            log.warning("dpp: %s", exc)
            request.report.add_table_unpruned(name, None,
                                              Refusal.of(Code.WIRE_BROKEN, error=exc))
            self._listed(request, token)
            return {"status": "none", "version": WIRE_VERSION, "reason": str(exc)[:300]}
        result.handoff_seconds = time.perf_counter() - t0
        with self._lock:
            if token in self._answers:   # a copy listed it meanwhile: its answer, reported once
                return self._answers[token][1]
            self._answers[token] = (time.monotonic(), answer)
            while len(self._answers) > _KEPT_ANSWERS:
                self._answers.pop(next(iter(self._answers)))
        request.report.add_table_result(name, None, table, result)
        if token in request.whole:
            request.report.mark_whole(request.report.tables[-1])
        self._listed(request, token)
        return answer

    def on_end(self, scope: str) -> None:
        """Spark ended execution ``scope``: if its request still waits for a listing, the
        relation was never scanned (AQE skipped it, or a reuse made it unneeded); the query's
        report is written now, saying so, instead of never."""
        with self._lock:
            request = self._scopes.get(scope)
        if request is None:
            return
        with request.lock:
            if request.done or not request.started:
                return
            missing = [t for t in request.tokens if t not in request.listed]
        for token in missing:
            _table, name = request.tokens[token]
            request.report.add_table_unpruned(name, None, Refusal(Code.NEVER_LISTED))
            self._listed(request, token)

    def on_refused(self, tokens: list[str], reason: str) -> None:
        """The answer naming ``tokens`` broke the wire contract (the rule refused it, or it
        was never sent): Spark's plan runs, those relations are never listed, and the
        query's report says why."""
        for token in tokens:
            with self._lock:
                request = self._by_token.get(token)
            if request is None or token not in request.tokens:
                continue
            with request.lock:
                if token in request.listed:
                    continue
            _table, name = request.tokens[token]
            request.report.add_table_unpruned(name, None,
                                              Refusal.of(Code.WIRE_BROKEN, error=reason))
            self._listed(request, token)

    def _listed(self, request: Request, token: str) -> None:
        with request.lock:
            asked = request.list_started.pop(token, None)
            if asked is not None:
                request.list_waits.append((asked, time.perf_counter()))
            request.listed.add(token)
            if request.done or set(request.tokens) - request.listed:
                return
            request.done = True
        runs = request.runs
        report = request.report
        try:
            runs.settle_into(report)
        finally:
            runs.__exit__(None, None, None)
        report.phases["wait"] = max((getattr(t, "wait_seconds", 0.0) or 0.0
                                     for t in report.tables), default=0.0)
        report.phases["split_enumeration"] = sum((getattr(t, "enumeration_seconds", 0.0) or 0.0)
                                                 for t in report.tables)
        # what of it Spark's execution waited for: its listings, from asking to the answer
        report.phases["listing_wait"] = request.listing_wait()
        with self._lock:
            self._requests.pop(report.query_id, None)
            for t in request.tokens:
                self._by_token.pop(t, None)
            if request.scope and self._scopes.get(request.scope) is request:
                del self._scopes[request.scope]
        self._finish(report, request.cfg)

    def _finish(self, report: JobReport, cfg: Any) -> None:
        self.session.publish(report, cfg)

    def _drop_stale(self) -> None:
        now = time.monotonic()
        with self._lock:
            for token in [t for t, (at, _a) in self._answers.items()
                          if now - at > _STALE_SECONDS]:
                del self._answers[token]
            stale = [r for r in self._requests.values() if now - r.created > _STALE_SECONDS]
            for r in stale:
                self._requests.pop(r.report.query_id, None)
                for t in r.tokens:
                    self._by_token.pop(t, None)
                if r.scope and self._scopes.get(r.scope) is r:
                    del self._scopes[r.scope]
        for r in stale:
            r.runs.__exit__(None, None, None)


def _spark_files(frame: Any) -> tuple[Optional[list[Any]], str]:
    """The files Spark's plan of the build side reads, as its relations' indexes listed
    them (``Dataset.inputFiles``: a superset where the side reads other relations too),
    each with its size and change proof (local files only)."""
    from hive_splits.listing import FileEntry

    if frame is None:
        return None, "no plan of the build side"
    names = list(frame.inputFiles())
    files = []
    for n in names:
        path = plain_path(str(n))
        if "://" in path or not path.startswith("/"):
            return None, f"file {n} is not local"
        try:
            st = os.stat(path)
        except OSError as exc:
            return None, f"file {n}: {exc}"
        files.append(FileEntry(path, st.st_size, st.st_mtime_ns,
                               (st.st_ino, st.st_ctime_ns)))
    return files, ""


# the longest a relation's load waits for a bound from file statistics (every file of a
# table listed and its footer read: about a second for TPC-DS catalog_sales' 1,836 files
# cold; a table of a hundred thousand partitions is given up on, reported as late)
STATS_BOUND_WAIT = 10.0

# the longest a bound waits for its relation's own load before reading every file instead
KEPT_BOUND_WAIT = 5.0


def _kept_load(p: Prune, targets: Mapping[int, tuple[Table, str, list[Prune]]],
               wrap: Mapping[str, str], request: Request) -> Optional[str]:
    """The token of the load whose kept partitions' files bound ``p``'s build key, or None
    (every file of the relation bounds it).

    Why it is sound: the build side's values are values of the column in the rows the
    relation's scan reads, and that scan reads the files of the partitions its load keeps.
    Were the scan to read more (its answer lost), the rows of the other partitions are ones
    that load's filters prove reach no output whatever the other relations hold (each is a
    build side's values, a superset of what the query meets), so the query's answer does not
    depend on them, nor on the rows only they would have joined.

    Chained only where the wait cannot come back to it: the relation has partitions that a
    build side's filter prunes (else its load keeps them all), its load waits for no
    filter left to Spark's keys (those come when Spark lists the scan, after the rule this
    bound may hold up), and for no other bound whose own relation could be chained."""
    rel = p.stats_of[0] if p.stats_of is not None else None
    if rel is None or rel not in targets or str(rel) not in wrap:
        return None
    token = wrap[str(rel)]
    ps = targets[rel][2]

    def partitions_pruned(prunes: list[Prune]) -> bool:
        return any(not q.data and q.stats_of is None for q in prunes)

    if not partitions_pruned(ps) or request.spark_keyed.get(token):
        return None
    for q in ps:
        if q.stats_of is not None and q.stats_of[0] in targets \
                and partitions_pruned(targets[q.stats_of[0]][2]):
            return None
    return token


def _kept_files(request: Request, token: str, table: Table,
                lister: Any) -> Optional[list[Any]]:
    """The files of the partitions the load ``token`` keeps (what its scan reads), or None
    when that load is not over within ``KEPT_BOUND_WAIT``, failed, or kept partitions that
    cannot be located (see :func:`hive_splits.kept_files.kept_files`)."""
    deadline = time.monotonic() + KEPT_BOUND_WAIT
    future = request.loads.get(token)
    while future is None and time.monotonic() < deadline:   # submitted after the builds
        time.sleep(0.005)
        future = request.loads.get(token)
    if future is None:
        return None
    try:
        result = future.result(timeout=max(0.0, deadline - time.monotonic()))
    except Exception as exc:   # noqa: BLE001 - late or failed: every file bounds it
        log.info("dpp: a bound reads every file: its relation's load %s (%s)", token, exc)
        return None
    return kept_files(table, result, lister)


# the report's note on a filter bounded by file statistics, kept for its rows
_STATS_ROWS = ("a bound from file statistics, tested per row, spares the join every row it "
               "removes")


def _relation_name(rel: dict[str, Any]) -> str:
    """A relation as notes name it: its catalog table, else its folder's name."""
    root = rel.get("root") or next(iter(rel.get("rootPaths") or []), "?")
    return rel.get("table") or os.path.basename(plain_path(root).rstrip("/")) or root
