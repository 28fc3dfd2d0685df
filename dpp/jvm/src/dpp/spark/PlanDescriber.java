package dpp.spark;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.BinaryComparison;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.GreaterThan;
import org.apache.spark.sql.catalyst.expressions.GreaterThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.LessThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.InSubquery;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Union;
import org.apache.spark.sql.catalyst.plans.logical.Window;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.datasources.CatalogFileIndex;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;

/**
 * A plan as Python reads it: every node numbered, with what tracing a join key needs (join
 * types and equi-join keys, projections and groupings that pass a column through, union
 * branches, IN-subqueries, partitioned file relations). Python decides; this class only
 * describes, and keeps the nodes and key expressions so Python can ask for a build side by
 * number while the rule waits.
 */
final class PlanDescriber {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final SparkSession session;
    private final List<LogicalPlan> nodes = new ArrayList<>();
    private final List<Expression> exprs = new ArrayList<>();
    private final Map<LogicalPlan, Integer> ids = new IdentityHashMap<>();
    private final ArrayNode out = JSON.createArrayNode();
    private final List<Integer> roots = new ArrayList<>();
    private final java.util.Set<Long> filtered = new java.util.HashSet<>();
    private int candidates;
    private int joins;
    private java.util.Set<LogicalPlan> staticallyEmpty = java.util.Collections.emptySet();

    PlanDescriber(SparkSession session) {
        this.session = session;
    }

    /** The catalog relations Spark's static partition filters leave empty
     * ({@link StaticPruning}): described so Python leaves them to Spark and says why. */
    PlanDescriber staticallyEmpty(java.util.Set<LogicalPlan> relations) {
        this.staticallyEmpty = relations;
        return this;
    }

    private java.util.Map<LogicalPlan, String> namesListed = java.util.Collections.emptyMap();

    /** The tokens of the partition names listed for catalog relations while the plan was
     * checked ({@link StaticPruning}): the description carries them (``namesToken``). */
    PlanDescriber namesListed(java.util.Map<LogicalPlan, String> tokens) {
        this.namesListed = tokens;
        return this;
    }

    SparkSession session() {
        return session;
    }

    LogicalPlan node(int id) {
        return nodes.get(id);
    }

    Expression expression(int id) {
        return exprs.get(id);
    }

    /** Whether the plan has both a partitioned file relation not yet wrapped and a join (or an
     * IN-subquery): only then is Python asked anything. Cheap when the answer is no. */
    static boolean worthDescribing(LogicalPlan plan) {
        boolean[] found = new boolean[2];
        scan(plan, found);
        return found[0] && found[1];
    }

    private static void scan(LogicalPlan p, boolean[] found) {
        if (found[0] && found[1]) {
            return;
        }
        HadoopFsRelation rel = candidate(p);
        if (rel != null) {
            found[0] = true;
        }
        if (p instanceof Join) {
            found[1] = true;
        } else if (p instanceof Filter) {
            for (Expression c : conjuncts(((Filter) p).condition())) {
                if (c instanceof InSubquery) {
                    found[1] = true;
                }
            }
        }
        for (LogicalPlan c : CollectionConverters.asJava(p.children())) {
            scan(c, found);
        }
    }

    /** The HadoopFsRelation of a Parquet relation read by its files, or null: partitioned,
     * or unpartitioned outside the catalog's index. Which of them is a fact dpp may prune is
     * not decided here: the relation goes on the wire with its raw facts (partition columns,
     * Spark's {@code sizeInBytes}) and the session's broadcast setting as Spark spells it,
     * and Python's {@code dpp.analysis.rules.is_fact} decides. */
    static HadoopFsRelation candidate(LogicalPlan p) {
        if (!(p instanceof LogicalRelation)) {
            return null;
        }
        LogicalRelation lr = (LogicalRelation) p;
        if (lr.isStreaming() || !(lr.relation() instanceof HadoopFsRelation)) {
            return null;
        }
        HadoopFsRelation rel = (HadoopFsRelation) lr.relation();
        if (rel.location() instanceof DppFileIndex
                || !(rel.fileFormat() instanceof ParquetFileFormat)) {
            return null;
        }
        if (rel.partitionSchema().isEmpty() && rel.location() instanceof CatalogFileIndex) {
            return null;
        }
        return rel;
    }

    /** The session's {@code spark.sql.autoBroadcastJoinThreshold} as it is spelled (Spark's
     * default text when unset, empty when unreadable): Python reads it, once, for every
     * front end. */
    static String broadcastSetting(SparkSession session) {
        try {
            return Compat.sessionState(session).conf()
                .getConfString("spark.sql.autoBroadcastJoinThreshold");
        } catch (Throwable t) {
            return "";
        }
    }

    /** The wire contract's version ({@code dpp/analysis/wire_schema.json}). */
    static final int WIRE_VERSION = WireCheck.VERSION;

    String describe(String request, boolean explaining, String scope) {
        return describe(request, explaining, scope, false);
    }

    /** With {@code served}, the message also carries the session's settings and Spark's job
     * tags on this thread (a Spark Connect operation's user and session): a driver-wide bridge
     * answers sessions it never saw by their own settings, not its own. */
    String describe(String request, boolean explaining, String scope, boolean served) {
        ObjectNode msg = JSON.createObjectNode();
        msg.put("op", "plan");
        msg.put("version", WIRE_VERSION);
        msg.put("request", request);
        msg.put("explain", explaining);
        if (scope != null) {
            msg.put("scope", scope);
        }
        msg.put("timeZone", Compat.sessionState(session).conf().sessionLocalTimeZone());
        msg.put("broadcastThreshold", broadcastSetting(session));
        try {   // where the user's code ran the query ("collect at job.py:31"), for the report
            String site = session.sparkContext().getCallSite().shortForm();
            if (site != null && !site.isEmpty()) {
                msg.put("callSite", site);
            }
        } catch (Throwable t) {
            // no call site: the report names the query by its plan alone
        }
        if (served) {
            ObjectNode about = msg.putObject("session");
            ObjectNode conf = about.putObject("conf");
            for (Map.Entry<String, String> e : CollectionConverters.asJava(
                    Compat.sessionState(session).conf().getAllConfs()).entrySet()) {
                conf.put(e.getKey(), e.getValue());
            }
            String tags = session.sparkContext().getLocalProperty(DppHook.JOB_TAGS);
            if (tags != null) {
                about.put("jobTags", tags);
            }
        }
        ArrayNode r = msg.putArray("roots");
        for (int id : roots) {
            r.add(id);
        }
        msg.set("nodes", out);
        return msg.toString();
    }

    PlanDescriber walk(LogicalPlan plan) {
        collectFiltered(plan);
        roots.add(visit(plan, null));
        return this;
    }

    /** The attributes any Filter of the plan reads, beyond {@code IS NOT NULL} (a relation
     * with a partition column among them is pruned by Spark's own static partition pruning,
     * which for a catalog table asks the metastore for the matching partitions only; an
     * {@code IS NOT NULL} that Spark inferred from a join would still fetch them all). */
    private void collectFiltered(LogicalPlan p) {
        if (p instanceof Filter) {
            for (Expression c : conjuncts(((Filter) p).condition())) {
                if (c instanceof org.apache.spark.sql.catalyst.expressions.IsNotNull) {
                    continue;   // inferred from a join: the metastore would still return all
                }
                for (Attribute a : CollectionConverters.asJava(c.references().toSeq())) {
                    filtered.add(a.exprId().id());
                }
            }
        }
        for (LogicalPlan c : CollectionConverters.asJava(p.children())) {
            collectFiltered(c);
        }
    }

    int candidates() {
        return candidates;
    }

    private int visit(LogicalPlan p, Object unused) {
        if (p == null) {
            return -1;
        }
        Integer known = ids.get(p);
        if (known != null) {
            return known;
        }
        int id = nodes.size();
        nodes.add(p);
        ids.put(p, id);
        ObjectNode n = JSON.createObjectNode();
        out.add(n);  // placeholder filled below (children first need ids)
        n.put("id", id);
        n.put("op", p.getClass().getSimpleName());
        String flagged = flagged(p);
        if (flagged != null) {
            n.put("flagged", flagged);
        }
        if (LIMITS.contains(p.getClass().getSimpleName()) && overSort(p)) {
            n.put("ordered", true);
        }
        ArrayNode calls = windowCalls(p);
        if (calls.size() > 0) {
            n.set("windowCalls", calls);
        }
        ArrayNode children = n.putArray("children");
        for (LogicalPlan c : CollectionConverters.asJava(p.children())) {
            children.add(visit(c, null));
        }
        ArrayNode output = n.putArray("output");
        for (Attribute a : CollectionConverters.asJava(p.output())) {
            ArrayNode col = output.addArray();
            col.add(a.exprId().id());
            col.add(a.name());
            col.add(a.dataType().simpleString());
        }
        if (p instanceof LogicalRelation) {
            String source = sourceName((LogicalRelation) p);
            if (source != null) {
                n.put("source", source);
            }
            describeRelation((LogicalRelation) p, n);
        } else if (p instanceof Join) {
            Join j = (Join) p;
            n.put("joinType", j.joinType().sql());
            ArrayNode keys = n.putArray("keys");
            if (j.condition().isDefined()) {
                for (Expression c : conjuncts(j.condition().get())) {
                    if (c instanceof EqualTo) {
                        ArrayNode pair = keys.addArray();
                        pair.add(key(((EqualTo) c).left()));
                        pair.add(key(((EqualTo) c).right()));
                    }
                }
                // comparisons (f.day <= d.last, BETWEEN): a side's rows beyond the other
                // side's bounds cannot match (dpp/analysis/plan_pairs.py pairs them)
                ArrayNode compares = null;
                for (Expression c : conjuncts(j.condition().get())) {
                    String op = comparison(c);
                    if (op != null) {
                        if (compares == null) {
                            compares = n.putArray("compares");
                        }
                        ArrayNode term = compares.addArray();
                        term.add(key(((BinaryComparison) c).left()));
                        term.add(op);
                        term.add(key(((BinaryComparison) c).right()));
                    }
                }
            }
        } else if (p instanceof Project) {
            ArrayNode map = n.putArray("map");
            for (NamedExpression e : CollectionConverters.asJava(((Project) p).projectList())) {
                passThrough(e, map);
            }
        } else if (p instanceof Aggregate) {
            Aggregate a = (Aggregate) p;
            java.util.Set<Long> grouping = new java.util.HashSet<>();
            for (Expression g : CollectionConverters.asJava(a.groupingExpressions())) {
                if (g instanceof AttributeReference) {
                    grouping.add(((AttributeReference) g).exprId().id());
                }
            }
            ArrayNode map = n.putArray("map");
            for (NamedExpression e : CollectionConverters.asJava(a.aggregateExpressions())) {
                Expression src = e instanceof Alias ? ((Alias) e).child() : (Expression) e;
                if (src instanceof AttributeReference
                        && grouping.contains(((AttributeReference) src).exprId().id())) {
                    ArrayNode m = map.addArray();
                    m.add(e.exprId().id());
                    m.add(((AttributeReference) src).exprId().id());
                }
            }
        } else if (p instanceof Window) {
            ArrayNode spec = n.putArray("partitionSpec");
            for (Expression e : CollectionConverters.asJava(((Window) p).partitionSpec())) {
                if (e instanceof AttributeReference) {
                    spec.add(((AttributeReference) e).exprId().id());
                }
            }
        } else if (p instanceof Union) {
            n.put("byName", false);
        } else if (p instanceof Filter) {
            ArrayNode subs = n.putArray("inSubqueries");
            boolean selective = false;
            for (Expression c : conjuncts(((Filter) p).condition())) {
                if (!(c instanceof org.apache.spark.sql.catalyst.expressions.IsNotNull)) {
                    selective = true;
                }
                if (c instanceof InSubquery) {
                    InSubquery in = (InSubquery) c;
                    List<Expression> values = CollectionConverters.asJava(in.values());
                    LogicalPlan sub = in.query().plan();
                    if (values.size() != 1 || !in.query().outerAttrs().isEmpty()
                            || sub.output().size() != 1) {
                        continue;  // multi-column or correlated: not traced
                    }
                    ObjectNode s = subs.addObject();
                    s.set("value", key(values.get(0)));
                    int subId = visit(sub, null);
                    s.put("query", subId);
                    Attribute subOut = sub.output().head();
                    s.set("queryKey", key(subOut));
                }
            }
            n.put("selective", selective);
            Boolean likely = likelySelective(((Filter) p).condition());
            if (likely != null) {
                n.put("sparkSelective", likely);
            }
        }
        return id;
    }

    /** Whether Spark's own dynamic partition pruning counts this condition as a filter on its
     * build side ({@code PartitionPruning.isLikelySelective}: a comparison, IN, LIKE, a string
     * predicate...; not IS NULL, a boolean column, a UDF). Spark plans no pruning by a side
     * without one, so no keys of Spark's can come for it. Null where Spark lacks the test. */
    private static Boolean likelySelective(Expression condition) {
        try {
            return org.apache.spark.sql.execution.dynamicpruning.PartitionPruning$.MODULE$
                .isLikelySelective(condition);
        } catch (Throwable t) {
            return null;
        }
    }

    /** The limit operators (by Spark's names) whose kept rows a sort right below decides:
     * the describer records that fact ({@code ordered}); whether a node's rows may differ per
     * run is decided in Python ({@code dpp.rules.unrepeatable}). */
    private static final java.util.Set<String> LIMITS = new java.util.HashSet<>(
        java.util.Arrays.asList("GlobalLimit", "LocalLimit", "Limit", "Tail", "Offset",
            "LimitAndOffset", "OffsetAndLimit", "GlobalLimitAndOffset"));

    /** The first expression of {@code p} itself (not its children) Spark flags as
     * nondeterministic (rand, nondeterministic UDFs, first/last, monotonically_increasing_id,
     * ...), as SQL, or null: a fact the rule in {@code dpp.rules} decides on. */
    static String flagged(LogicalPlan p) {
        for (Expression e : CollectionConverters.asJava(p.expressions())) {
            if (!e.deterministic()) {
                String sql = e.sql();
                return sql.length() > 120 ? sql.substring(0, 120) + "..." : sql;
            }
        }
        return null;
    }

    /**
     * The window functions of {@code p} (a Window or WindowGroupLimit), each as the facts
     * {@code dpp.rules.tie_order} decides on: [SQL name, aggregate, ROWS frame, whole-partition
     * frame, ordered]. Empty for any other operator. Python decides whether a value depends on
     * the order of tied rows (one rule for every front end); this side only reports.
     */
    static ArrayNode windowCalls(LogicalPlan p) {
        ArrayNode out = JSON.createArrayNode();
        String op = p.getClass().getSimpleName();
        if (!op.equals("Window") && !op.equals("WindowGroupLimit")) {
            return out;
        }
        for (Expression e : CollectionConverters.asJava(p.expressions())) {
            e.foreach(new scala.runtime.AbstractFunction1<Expression, scala.runtime.BoxedUnit>() {
                @Override
                public scala.runtime.BoxedUnit apply(Expression x) {
                    if (x instanceof org.apache.spark.sql.catalyst.expressions.WindowExpression) {
                        out.add(call((org.apache.spark.sql.catalyst.expressions.WindowExpression) x));
                    } else if (op.equals("WindowGroupLimit")
                            && x instanceof org.apache.spark.sql.catalyst.expressions.WindowFunction) {
                        ArrayNode c = out.addArray();   // its rank-like function, ordered
                        c.add(x.prettyName());
                        c.add(false);
                        c.add(false);
                        c.add(false);
                        c.add(true);
                    }
                    return scala.runtime.BoxedUnit.UNIT;
                }
            });
        }
        return out;
    }

    private static ArrayNode call(org.apache.spark.sql.catalyst.expressions.WindowExpression w) {
        ArrayNode c = JSON.createArrayNode();
        Expression fn = w.windowFunction();
        boolean aggregate =
            fn instanceof org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
        c.add(aggregate
            ? ((org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression) fn)
                .aggregateFunction().prettyName()
            : fn.prettyName());
        c.add(aggregate);
        Object frame = w.windowSpec().frameSpecification();
        boolean rows = false;
        boolean whole = false;
        if (frame instanceof org.apache.spark.sql.catalyst.expressions.SpecifiedWindowFrame) {
            org.apache.spark.sql.catalyst.expressions.SpecifiedWindowFrame f =
                (org.apache.spark.sql.catalyst.expressions.SpecifiedWindowFrame) frame;
            rows = f.frameType().getClass().getSimpleName().startsWith("RowFrame");
            whole = f.lower().getClass().getSimpleName().startsWith("UnboundedPreceding")
                && f.upper().getClass().getSimpleName().startsWith("UnboundedFollowing");
        }
        c.add(rows);
        c.add(whole);
        c.add(!w.windowSpec().orderSpec().isEmpty());
        return c;
    }

    /** A limit, offset or tail right above a sort (through projections and other limits):
     * which rows it keeps is the sort's choice, not the scan's file order (ties aside). */
    static boolean overSort(LogicalPlan p) {
        LogicalPlan c = p;
        for (int i = 0; i < 8 && c.children().size() == 1; i++) {
            c = c.children().head();
            String op = c.getClass().getSimpleName();
            if (op.equals("Sort")) {
                return true;
            }
            if (!op.equals("Project") && !LIMITS.contains(op)) {
                return false;
            }
        }
        return false;
    }

    /**
     * Whether every TIMESTAMP partition value Spark's reader holds is the instant its folder
     * name reads as in this session's time zone now. Spark typed the values when the relation
     * was made, in the zone of that moment (which the plan does not carry); dpp reads the
     * folder names in today's zone, so it may prune only where the two agree.
     */
    private boolean timestampsAgree(
            org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex index,
            org.apache.spark.sql.types.StructType schema) {
        try {
            org.apache.spark.sql.types.StructField[] fields = schema.fields();
            String tz = Compat.sessionState(session).conf().sessionLocalTimeZone();
            for (org.apache.spark.sql.execution.datasources.PartitionPath pp
                    : CollectionConverters.asJava(index.partitionSpec().partitions())) {
                java.util.Map<String, String> texts = new java.util.HashMap<>();
                org.apache.hadoop.fs.Path path = pp.path();
                for (int level = 0; level < fields.length && path != null; level++) {
                    String name = path.getName();
                    int eq = name.indexOf('=');
                    if (eq > 0) {
                        texts.put(name.substring(0, eq).toLowerCase(java.util.Locale.ROOT),
                            org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils
                                .unescapePathName(name.substring(eq + 1)));
                    }
                    path = path.getParent();
                }
                org.apache.spark.sql.catalyst.InternalRow values = pp.values();
                for (int i = 0; i < fields.length; i++) {
                    if (!(fields[i].dataType() instanceof org.apache.spark.sql.types.TimestampType)) {
                        continue;
                    }
                    String text = texts.get(fields[i].name().toLowerCase(java.util.Locale.ROOT));
                    if (text == null) {
                        return false;
                    }
                    Object mine = "__HIVE_DEFAULT_PARTITION__".equals(text)
                        ? null : DppFileIndex.castText(text, fields[i].dataType(), tz);
                    if (values.isNullAt(i) != (mine == null)) {
                        return false;
                    }
                    if (mine != null && values.getLong(i) != ((Number) mine).longValue()) {
                        return false;
                    }
                }
            }
            return true;
        } catch (Throwable t) {
            return false;
        }
    }

    /** What a report calls a relation (a build side's table): the catalog table's name, else
     * the folder a file relation reads; null for anything else. */
    private static String sourceName(LogicalRelation lr) {
        try {
            if (lr.catalogTable().isDefined()) {
                return lr.catalogTable().get().identifier().table();
            }
            if (lr.relation() instanceof HadoopFsRelation) {
                List<org.apache.hadoop.fs.Path> roots = CollectionConverters.asJava(
                    ((HadoopFsRelation) lr.relation()).location().rootPaths());
                if (roots.size() == 1) {
                    String name = roots.get(0).getName();
                    return name.endsWith(".parquet")
                        ? name.substring(0, name.length() - ".parquet".length()) : name;
                }
            }
        } catch (Throwable t) {
            // no name: the report names the build side by its key alone
        }
        return null;
    }

    /** Spark's size estimate of the relation's files (a BigInt-backed long, capped). */
    private static long sizeOf(HadoopFsRelation rel) {
        try {
            return rel.sizeInBytes();
        } catch (Throwable t) {
            return Long.MAX_VALUE;
        }
    }

    private void describeRelation(LogicalRelation lr, ObjectNode n) {
        HadoopFsRelation rel = candidate(lr);
        if (rel == null) {
            return;
        }
        candidates++;
        FileIndex loc = rel.location();
        ObjectNode r = n.putObject("relation");
        String kind = loc instanceof CatalogFileIndex ? "catalog" : "path";
        r.put("kind", kind);
        r.put("index", loc.getClass().getSimpleName());
        if (lr.catalogTable().isDefined()) {
            r.put("table", lr.catalogTable().get().identifier().unquotedString());
        }
        ArrayNode roots = r.putArray("rootPaths");
        for (org.apache.hadoop.fs.Path path : CollectionConverters.asJava(loc.rootPaths())) {
            roots.add(path.toString());
        }
        boolean hasTimestamp = false;
        for (org.apache.spark.sql.types.StructField f : rel.partitionSchema().fields()) {
            hasTimestamp |= f.dataType() instanceof org.apache.spark.sql.types.TimestampType;
        }
        if (hasTimestamp && !(loc instanceof CatalogFileIndex)) {
            r.put("timestampsAgree", loc instanceof
                org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex
                && timestampsAgree(
                    (org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex) loc,
                    rel.partitionSchema()));
        }
        ArrayNode parts = r.putArray("partitionColumns");
        for (org.apache.spark.sql.types.StructField f : rel.partitionSchema().fields()) {
            parts.add(f.name());
        }
        r.put("bucketed", rel.bucketSpec().isDefined());
        if (rel.partitionSchema().isEmpty()) {   // a fact only when Spark would not broadcast it
            r.put("sizeInBytes", sizeOf(rel));
        }
        boolean partitionFiltered = false;
        java.util.Set<String> partNames = new java.util.HashSet<>();
        for (org.apache.spark.sql.types.StructField f : rel.partitionSchema().fields()) {
            partNames.add(f.name().toLowerCase(java.util.Locale.ROOT));
        }
        for (Attribute a : CollectionConverters.asJava(lr.output())) {
            if (partNames.contains(a.name().toLowerCase(java.util.Locale.ROOT))
                    && filtered.contains(a.exprId().id())) {
                partitionFiltered = true;
            }
        }
        r.put("partitionFiltered", partitionFiltered);
        if (staticallyEmpty.contains(lr)) {
            r.put("staticallyEmpty", true);
        }
        String token = namesListed.get(lr);
        if (token != null) {
            r.put("namesToken", token);
        }
        if (loc instanceof FolderIndex) {
            r.put("folderNames", ((FolderIndex) loc).namesToken());
        }
    }

    private void passThrough(NamedExpression e, ArrayNode map) {
        Expression src = e instanceof Alias ? ((Alias) e).child() : (Expression) e;
        if (src instanceof AttributeReference) {
            ArrayNode m = map.addArray();
            m.add(e.exprId().id());
            m.add(((AttributeReference) src).exprId().id());
        }
    }

    /** A join key: its expression's number (for a build side), the attribute it reads when it
     * is one (or a cast of one), the cast's target type, and its own type. */
    private ObjectNode key(Expression e) {
        ObjectNode k = JSON.createObjectNode();
        k.put("expr", exprs.size());
        exprs.add(e);
        k.put("type", e.dataType().simpleString());
        k.put("sql", e.sql());
        Expression inner = e;
        if (e instanceof Cast) {
            k.put("cast", e.dataType().simpleString());
            inner = ((Cast) e).child();
            k.put("from", inner.dataType().simpleString());
        }
        if (inner instanceof AttributeReference) {
            k.put("attr", ((AttributeReference) inner).exprId().id());
        }
        // an expression key (f.sid + 1, f.a + f.b): the attributes it reads, and whether
        // Spark's own evaluation of it on partition values is what the join compares
        ArrayNode refs = k.putArray("refs");
        for (long id : KeyEvaluator.references(e)) {
            refs.add(id);
        }
        k.put("deterministic", e.deterministic()
            && !org.apache.spark.sql.catalyst.expressions.SubqueryExpression$.MODULE$.hasSubquery(e)
            && !e.exists(new scala.runtime.AbstractFunction1<Expression, Object>() {
                @Override
                public Object apply(Expression x) {
                    return x instanceof org.apache.spark.sql.catalyst.expressions.Unevaluable
                        && !(x instanceof Attribute);
                }
            }));
        return k;
    }

    /** The operator of an order comparison ({@code <}, {@code <=}, {@code >}, {@code >=}),
     * or null for any other expression ({@code <=>} and {@code =} are not bounds). */
    private static String comparison(Expression c) {
        if (c instanceof LessThan) {
            return "<";
        }
        if (c instanceof LessThanOrEqual) {
            return "<=";
        }
        if (c instanceof GreaterThan) {
            return ">";
        }
        if (c instanceof GreaterThanOrEqual) {
            return ">=";
        }
        return null;
    }

    static List<Expression> conjuncts(Expression e) {
        List<Expression> outList = new ArrayList<>();
        collect(e, outList);
        return outList;
    }

    private static void collect(Expression e, List<Expression> outList) {
        if (e instanceof And) {
            collect(((And) e).left(), outList);
            collect(((And) e).right(), outList);
        } else {
            outList.add(e);
        }
    }
}
