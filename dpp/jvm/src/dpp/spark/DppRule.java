package dpp.spark;

import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.function.Function;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.CatalogFileIndex;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import scala.runtime.AbstractPartialFunction;

/**
 * The optimizer rule (a pre-CBO rule: after Spark has pushed filters down and inferred
 * IS NOT NULL from joins, before {@code PruneFileSourcePartitions} lists a catalog table's
 * statically kept partitions). It asks Python which partitioned relations to prune and wraps
 * each one's file index in a {@link DppFileIndex}. Anything unexpected leaves Spark's plan.
 */
final class DppRule extends Rule<LogicalPlan> {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final SparkSession session;

    DppRule(SparkSession session) {
        this.session = session;
    }

    @Override
    public String ruleName() {
        return "dpp.spark.DppRule";
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        Function<String, String> bridge = DppHook.bridge(session);
        if (bridge == null) {
            return plan;
        }
        try {
            String enabled = session.conf().get("spark.dpp.enabled", "true");
            String hook = session.conf().get("spark.dpp.optimizerHook", "true");
            if (!"true".equalsIgnoreCase(enabled.trim()) || !"true".equalsIgnoreCase(hook.trim())) {
                return plan;
            }
        } catch (Throwable t) {
            return plan;
        }
        return catalogsOnDriver(prune(plan, bridge));
    }

    /**
     * Every catalog table Spark is left to list (one dpp does not prune, or cannot), in local
     * folders, over a copy of its catalog index that lists on the driver
     * ({@link DppFileIndex#onDriver}): {@code PruneFileSourcePartitions} then lists its
     * partitions as Spark would, with Spark's index, filters, settings and file-status cache,
     * but without a listing job per query over every partition folder. Anything unexpected
     * leaves the plan as it is.
     */
    private LogicalPlan catalogsOnDriver(LogicalPlan plan) {
        try {
            return onDriver(plan);
        } catch (Throwable t) {
            logWarning(() -> "dpp: catalog tables list as Spark's plan says: " + t, t);
            return plan;
        }
    }

    /** {@code p} with its catalog relations swapped. Spark's own {@code transform} cannot do
     * it: a catalog index equals any other over the same table, so Spark would keep the node
     * it sees as unchanged; the nodes above a swapped relation are rebuilt here instead. */
    private static LogicalPlan onDriver(LogicalPlan p) {
        if (p instanceof LogicalRelation) {
            LogicalRelation lr = (LogicalRelation) p;
            if (!(lr.relation() instanceof HadoopFsRelation)) {
                return p;
            }
            HadoopFsRelation rel = (HadoopFsRelation) lr.relation();
            if (!(rel.location() instanceof CatalogFileIndex)) {
                return p;
            }
            FileIndex copy = DppFileIndex.onDriver((CatalogFileIndex) rel.location());
            if (copy == rel.location()) {
                return p;
            }
            HadoopFsRelation out = rel.copy(copy, rel.partitionSchema(), rel.dataSchema(),
                rel.bucketSpec(), rel.fileFormat(), rel.options(), rel.sparkSession());
            LogicalRelation swapped = Compat.withRelation(lr, out);
            swapped.copyTagsFrom(lr);
            return swapped;
        }
        java.util.List<LogicalPlan> children = CollectionConverters.asJava(p.children());
        java.util.List<LogicalPlan> next = new java.util.ArrayList<>(children.size());
        boolean changed = false;
        for (LogicalPlan c : children) {
            LogicalPlan n = onDriver(c);
            changed |= n != c;
            next.add(n);
        }
        if (!changed) {
            return p;
        }
        LogicalPlan out = p.withNewChildrenInternal(
            CollectionConverters.asScala(next).toIndexedSeq());
        out.copyTagsFrom(p);
        return out;
    }

    private LogicalPlan prune(LogicalPlan plan, Function<String, String> bridge) {
        String request = null;
        try {
            if ("true".equals(session.sparkContext().getLocalProperty(DppHook.INTERNAL))) {
                return plan;  // dpp's own build side
            }
            if (!PlanDescriber.worthDescribing(plan)) {
                return plan;
            }
            StaticPruning.Result statics = StaticPruning.catalogRelations(plan);
            PlanDescriber d = new PlanDescriber(session)
                .staticallyEmpty(statics.empty)
                .namesListed(statics.names)
                .walk(plan);
            if (d.candidates() == 0) {
                return plan;
            }
            request = DppHook.register(d);
            boolean explaining =
                "true".equals(session.sparkContext().getLocalProperty(DppHook.EXPLAIN));
            boolean served = DppHook.served(session);
            if (served && !connectOperation(session)) {
                // a served session optimizing outside an executed operation (a Connect
                // explain, schema or persist request): plan, start nothing; a plan that is
                // scanned later starts its build sides on its first listing
                explaining = true;
            }
            // the optimizer runs of one executed query (its subqueries are optimized in runs
            // of their own) share Spark's execution id (a Connect operation's tag where Connect
            // plans outside one): Python shares filters and file indexes across them, so
            // Spark's subquery and exchange reuse still apply
            String scope = DppHook.scope(session.sparkContext());
            String answer = DppHook.call(bridge, d.describe(request, explaining, scope, served), 120.0);
            if (answer == null) {
                return plan;
            }
            JsonNode a = JSON.readTree(answer);
            String bad = WireCheck.problem("planAnswer", a);
            if (bad == null) {
                bad = unknownNodes(a, d);
            }
            if (bad != null) {
                // Spark's plan, never a guess at what the answer meant; Python's report of
                // the query says why (its relations were planned, never wrapped)
                final String why = bad;
                final String id = request;
                logWarning(() -> "dpp: the answer to plan " + id + " breaks the wire "
                    + "contract (" + why + "); Spark's plan is kept");
                refused(bridge, a, why);
                return plan;
            }
            JsonNode wrap = a.get("wrap");
            if (wrap == null || wrap.size() == 0) {
                return plan;
            }
            double timeout = a.has("timeout") ? a.get("timeout").asDouble() : 60.0;
            if (scope != null) {
                DppHook.opened(scope);
            }
            Map<LogicalPlan, String> tokens = new java.util.IdentityHashMap<>();
            Iterator<Map.Entry<String, JsonNode>> it = wrap.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                tokens.put(d.node(Integer.parseInt(e.getKey())), e.getValue().asText());
            }
            Map<LogicalPlan, String> pruning = new java.util.IdentityHashMap<>();
            JsonNode described = a.get("describe");
            if (described != null && described.isObject()) {
                Iterator<Map.Entry<String, JsonNode>> dit = described.fields();
                while (dit.hasNext()) {
                    Map.Entry<String, JsonNode> e = dit.next();
                    if (e.getValue().isTextual()) {
                        pruning.put(d.node(Integer.parseInt(e.getKey())), e.getValue().asText());
                    }
                }
            }
            Map<LogicalPlan, JsonNode> rowFilters = new java.util.IdentityHashMap<>();
            JsonNode rf = a.get("rowFilters");
            if (rf != null) {
                Iterator<Map.Entry<String, JsonNode>> rit = rf.fields();
                while (rit.hasNext()) {
                    Map.Entry<String, JsonNode> e = rit.next();
                    rowFilters.put(d.node(Integer.parseInt(e.getKey())), e.getValue());
                }
            }
            return plan.transformUp(new Wrap(tokens, pruning, rowFilters, bridge, timeout));
        } catch (Throwable t) {
            logWarning(() -> "dpp: the optimizer hook failed, Spark's plan is kept: " + t, t);
            return plan;
        } finally {
            if (request != null) {
                DppHook.forget(request);
            }
        }
    }

    /** Why the answer names a node the plan it answers does not hold, or null. */
    private static String unknownNodes(JsonNode a, PlanDescriber d) {
        for (String field : new String[] {"wrap", "describe", "rowFilters"}) {
            Iterator<String> ids = a.path(field).fieldNames();
            while (ids.hasNext()) {
                String id = ids.next();
                try {
                    if (d.node(Integer.parseInt(id)) != null) {
                        continue;
                    }
                } catch (RuntimeException e) {
                    // not a node number
                }
                return field + "." + id + " names no node of the plan";
            }
        }
        return null;
    }

    /** Tells Python the answer was refused: the tokens it gave are never listed. */
    private static void refused(Function<String, String> bridge, JsonNode a, String why) {
        try {
            com.fasterxml.jackson.databind.node.ObjectNode msg = JSON.createObjectNode();
            msg.put("op", "refused");
            msg.put("reason", why);
            com.fasterxml.jackson.databind.node.ArrayNode tokens = msg.putArray("tokens");
            Iterator<JsonNode> it = a.path("wrap").elements();
            while (it.hasNext()) {
                JsonNode t = it.next();
                if (t.isTextual()) {
                    tokens.add(t.asText());
                }
            }
            DppHook.call(bridge, msg.toString(), 30.0);
        } catch (Throwable t) {
            // the report then says the relation was never listed
        }
    }

    private static boolean connectOperation(SparkSession session) {
        String tags = session.sparkContext().getLocalProperty(DppHook.JOB_TAGS);
        return tags != null && tags.contains(DppHook.CONNECT_OPERATION);
    }

    private static final class Wrap extends AbstractPartialFunction<LogicalPlan, LogicalPlan> {
        private final Map<LogicalPlan, String> tokens;
        private final Map<LogicalPlan, String> pruning;
        private final Map<LogicalPlan, JsonNode> rowFilters;
        private final Function<String, String> bridge;
        private final double timeout;

        Wrap(Map<LogicalPlan, String> tokens, Map<LogicalPlan, String> pruning,
             Map<LogicalPlan, JsonNode> rowFilters, Function<String, String> bridge,
             double timeout) {
            this.tokens = tokens;
            this.pruning = pruning;
            this.rowFilters = rowFilters;
            this.bridge = bridge;
            this.timeout = timeout;
        }

        @Override
        public boolean isDefinedAt(LogicalPlan p) {
            return tokens.containsKey(p);
        }

        @Override
        public LogicalPlan apply(LogicalPlan p) {
            String token = tokens.get(p);
            if (token == null) {
                return p;
            }
            LogicalRelation lr = (LogicalRelation) p;
            HadoopFsRelation rel = (HadoopFsRelation) lr.relation();
            DppFileIndex index = new DppFileIndex(rel.sparkSession(), rel.location(), token,
                bridge, timeout, pruning.get(p));
            HadoopFsRelation wrapped = rel.copy(index, rel.partitionSchema(), rel.dataSchema(),
                rel.bucketSpec(), rel.fileFormat(), rel.options(), rel.sparkSession());
            LogicalRelation out = Compat.withRelation(lr, wrapped);
            JsonNode filters = rowFilters.get(p);
            return filters == null ? out : RowFilter.over(out, filters);
        }
    }
}
