package dpp.spark;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.execution.datasources.FileStatusCache;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation$;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.runtime.AbstractFunction1;

/**
 * The JVM side of dpp's optimizer hook: where Spark calls in, and the way back to Python.
 *
 * Python installs one rule per SparkSessionExtensions object (the optimizer reads the
 * extensions' rule builders every time it lists its batches, so a rule injected into a live
 * session takes effect from its next query) and registers a bridge per SparkSession: a
 * {@code java.util.function.Function<String, String>} that PySpark's callback server implements
 * (a JDK interface, so py4j needs no class of ours to make the proxy). Every message is JSON
 * text; the decisions are Python's, this side only describes plans, wraps file indexes and
 * turns file lists into Spark's shapes.
 */
public final class DppHook {
    /** Local property set by Python on threads that run dpp's own build sides. */
    public static final String INTERNAL = "spark.dpp.internal";
    /** Local property set by Python while a DataFrame is explained: no build side starts. */
    public static final String EXPLAIN = "spark.dpp.explaining";
    /** Spark's local property holding the thread's job tags (a Connect operation's among
     * them: {@link #CONNECT_OPERATION}). */
    static final String JOB_TAGS = "spark.job.tags";
    /** How the job tag of a Spark Connect operation starts (Spark's {@code ExecuteJobTag}). */
    static final String CONNECT_OPERATION = "SparkConnect_OperationTag_";
    /** A scope named by a Connect operation's job tag (see {@link #scope}). */
    static final String CONNECT_SCOPE = "connect:";
    /** Spark's local property naming the executed query an optimizer run belongs to. */
    static final String EXECUTION_ID = "spark.sql.execution.id";
    /** Scopes whose build sides are remembered for {@link #buildSignature}. */
    private static final int SCOPES_KEPT = 64;

    private static final Map<SparkSession, Function<String, String>> BRIDGES =
        Collections.synchronizedMap(new WeakHashMap<>());
    /** The bridge of sessions that registered none (a Connect server's), or null. */
    private static volatile Function<String, String> SERVER;
    /** Scopes (execution ids) with wrapped relations: told to Python when they end. */
    private static final java.util.Set<String> OPEN_SCOPES = ConcurrentHashMap.newKeySet();
    private static final Map<org.apache.spark.SparkContext, Boolean> LISTENING =
        Collections.synchronizedMap(new WeakHashMap<>());
    /** Per session, the clone its build sides run in (see {@link #buildSession}). */
    private static final Map<SparkSession, BuildSession> CLONES =
        Collections.synchronizedMap(new WeakHashMap<>());
    private static final Map<SparkSessionExtensions, Boolean> INSTALLED =
        Collections.synchronizedMap(new WeakHashMap<>());
    private static final Map<String, PlanDescriber> REQUESTS = new ConcurrentHashMap<>();
    /** Per scope, the canonical build sides seen so far: a signature is a position here. */
    private static final Map<String, List<LogicalPlan>> BUILDS =
        new java.util.LinkedHashMap<String, List<LogicalPlan>>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, List<LogicalPlan>> eldest) {
                return size() > SCOPES_KEPT;
            }
        };
    private static final AtomicLong NEXT = new AtomicLong();
    private static final ExecutorService CALLS = Executors.newCachedThreadPool(new ThreadFactory() {
        private final AtomicLong n = new AtomicLong();
        @Override public Thread newThread(Runnable r) {
            Thread t = new Thread(r, "dpp-bridge-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        }
    });

    private DppHook() {}

    /** Routes this session's optimizer through dpp: idempotent, returns true when the rule was
     * newly injected into the session's extensions. */
    /** The partition names the rule listed for a catalog relation of a plan it described
     * (the relation's ``namesToken``), one per line, once; null when taken or dropped: the
     * split loader then lists them itself. */
    public static StringBuilder takeNames(String token) {
        return StaticPruning.takeNames(token);
    }

    public static boolean install(SparkSession session, Function<String, String> bridge) {
        BRIDGES.put(session, bridge);
        org.apache.spark.SparkContext sc = session.sparkContext();
        synchronized (LISTENING) {
            if (!LISTENING.containsKey(sc)) {
                sc.addSparkListener(new ExecutionEnds());
                LISTENING.put(sc, Boolean.TRUE);
            }
        }
        SparkSessionExtensions ext = Compat.extensions(session);
        synchronized (INSTALLED) {
            if (INSTALLED.containsKey(ext)) {
                return false;
            }
            ext.injectPreCBORule(new Builder());
            INSTALLED.put(ext, Boolean.TRUE);
            return true;
        }
    }

    /**
     * Routes every session of this driver through dpp, the ones it never saw included: the
     * sessions a Spark Connect server makes per client share the root session's extensions
     * (so the rule runs for them) but register no bridge, and they reach {@code bridge}
     * instead, whose answers then follow each session's own settings
     * ({@link PlanDescriber#describe}: the message carries them). A session with a bridge of
     * its own keeps it.
     */
    public static boolean installServer(SparkSession root, Function<String, String> bridge) {
        SERVER = bridge;
        return install(root, bridge);
    }

    private static final Map<SparkSessionExtensions, Boolean> VIEWS_INSTALLED =
        Collections.synchronizedMap(new WeakHashMap<>());

    /**
     * A table a Connect server declares as the global temporary view {@code name} of
     * {@code viewText}: every session made after this call from {@code root} (each Connect
     * client's) reads it as its own {@code spark.read.parquet} would at each query
     * ({@link DeclaredViews}). Returns false on a Spark line with no analyzer rule run before
     * relations are resolved (3.5): there the view is Spark's, columns fixed when declared.
     */
    public static boolean declareView(SparkSession root, String name, String viewText,
                                      String folder) {
        SparkSessionExtensions ext = Compat.extensions(root);
        synchronized (VIEWS_INSTALLED) {
            Boolean done = VIEWS_INSTALLED.get(ext);
            if (done == null) {
                done = Compat.injectBeforeRelations(ext, new DeclaredViews.Builder());
                VIEWS_INSTALLED.put(ext, done);
            }
            if (done) {
                DeclaredViews.declare(name, viewText, folder);
            }
            return done;
        }
    }

    public static void uninstall(SparkSession session) {
        Function<String, String> gone = BRIDGES.remove(session);
        if (gone != null && gone == SERVER) {
            SERVER = null;
        }
    }

    public static boolean installed(SparkSession session) {
        return BRIDGES.containsKey(session);
    }

    /** Whether a driver-wide bridge ({@link #installServer}) serves sessions without one. */
    public static boolean serving() {
        return SERVER != null;
    }

    static Function<String, String> bridge(SparkSession session) {
        Function<String, String> own = BRIDGES.get(session);
        return own != null ? own : SERVER;
    }

    /** Whether {@code session} is served by the driver-wide bridge, not a bridge of its own. */
    static boolean served(SparkSession session) {
        return SERVER != null && !BRIDGES.containsKey(session);
    }

    /** Calls Python with a bound on the wait: a bridge that does not answer in time is "no
     * pruning" (null), never a stuck query. */
    static String call(Function<String, String> bridge, String message, double timeoutSeconds) {
        Future<String> f = CALLS.submit(() -> send(bridge, message));
        try {
            return f.get((long) Math.max(1.0, timeoutSeconds * 1000.0), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            f.cancel(true);
            return null;
        }
    }

    /** The most bytes of one message part on py4j's wire (its writer's buffer is 8 KiB). */
    static final int PART_BYTES = 7000;
    /** How the parts of a longer message start: {@code <mark><id> <text>} (never JSON's first
     * character); Python's {@code dpp.frontends.hook.bridge} joins them. */
    static final String PART = "\u0001part ";
    static final String LAST = "\u0001last ";

    /**
     * Hands {@code message} to Python, in parts when py4j would write it in more than one.
     *
     * Why: py4j writes a callback through an 8 KiB buffered writer on a socket with Nagle's
     * algorithm on; a longer command leaves as two writes and the second waits for the
     * receiver's delayed ACK, about 40 ms on Linux (py4j issue 516) on every optimizer run
     * whose plan description passes 8 KiB. A part that fits one write costs a loopback round
     * trip.
     */
    static String send(Function<String, String> bridge, String message) {
        List<String> parts = parts(message, PART_BYTES);
        if (parts.size() == 1) {
            return bridge.apply(message);
        }
        String id = "m" + NEXT.incrementAndGet() + " ";
        for (int i = 0; i < parts.size() - 1; i++) {
            bridge.apply(PART + id + parts.get(i));
        }
        return bridge.apply(LAST + id + parts.get(parts.size() - 1));
    }

    /** {@code s} cut into pieces of at most about {@code budget} bytes as py4j sends them
     * (UTF-8, with a backslash, CR or LF escaped in two), never inside a surrogate pair. */
    public static List<String> parts(String s, int budget) {
        List<String> out = new ArrayList<>();
        int start = 0;
        int bytes = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            int b = c < 0x80 ? (c == '\\' || c == '\n' || c == '\r' ? 2 : 1) : c < 0x800 ? 2 : 3;
            if (bytes + b > budget && i > start && !Character.isLowSurrogate(c)) {
                out.add(s.substring(start, i));
                start = i;
                bytes = 0;
            }
            bytes += b;
        }
        out.add(s.substring(start));
        return out;
    }

    static String register(PlanDescriber d) {
        String id = "r" + NEXT.incrementAndGet();
        REQUESTS.put(id, d);
        return id;
    }

    static void forget(String request) {
        REQUESTS.remove(request);
    }

    /**
     * The build side of a dynamic filter: the plan node {@code node} of request
     * {@code request}, projected to the join-key expression {@code expr} (named
     * {@code dpp_key}). Called by Python while the rule waits for its answer.
     */
    public static Dataset<Row> buildDataset(String request, int node, int expr, String semi) {
        PlanDescriber d = REQUESTS.get(request);
        if (d == null) {
            throw new IllegalStateException("dpp: plan request " + request + " is over");
        }
        return Compat.ofRows(buildSession(d.session()), buildPlan(d, node, expr, semi));
    }

    /**
     * The session build sides run in: a clone of {@code session} with every setting it has
     * now (the time zone, ANSI mode and the rest shape the build's values), except adaptive
     * execution, which is off, and shuffle partitions, at most the cluster's cores.
     *
     * Why: Spark schedules jobs FIFO by job id, and under adaptive execution each query stage
     * is a job of its own. A build side's last stage, submitted after its first one ran, then
     * queues behind every stage the main query submitted meanwhile (TPC-DS q49: a one-month
     * calendar build waited 97 s behind ~6,000 scan tasks, and its filters came too late).
     * Without adaptive execution the build is one job, and all its stages keep that job's
     * place in the queue. The clone has no bridge, so dpp's rule leaves its plans alone.
     * A clone is reused while the session's settings stay the same.
     */
    static SparkSession buildSession(
            SparkSession s) {
        scala.collection.immutable.Map<String, String> confs = s.sessionState().conf().getAllConfs();
        synchronized (CLONES) {
            BuildSession kept = CLONES.get(s);
            if (kept != null && kept.confs.equals(confs)) {
                return kept.session;
            }
        }
        SparkSession clone = Compat.cloneSession(s);
        org.apache.spark.sql.internal.SQLConf conf = clone.sessionState().conf();
        conf.setConfString("spark.sql.adaptive.enabled", "false");
        int cores = Math.max(1, s.sparkContext().defaultParallelism());
        conf.setConfString("spark.sql.shuffle.partitions",
            Integer.toString(Math.max(1, Math.min(cores, conf.numShufflePartitions()))));
        synchronized (CLONES) {
            CLONES.put(s, new BuildSession(confs, clone));
        }
        return clone;
    }

    private static final class BuildSession {
        final scala.collection.immutable.Map<String, String> confs;
        final SparkSession session;

        BuildSession(scala.collection.immutable.Map<String, String> confs,
                     SparkSession session) {
            this.confs = confs;
            this.session = session;
        }
    }

    /** The facts {@code dpp.determinism} decides on for a DataFrame handed over as a build
     * side, node by node over {@code plan}: JSON [{op, flagged?, windowCalls?}, ...] (what
     * the describer records; {@code dpp.rules} decides). */
    public static String nodeFacts(LogicalPlan plan) {
        com.fasterxml.jackson.databind.ObjectMapper json =
            new com.fasterxml.jackson.databind.ObjectMapper();
        com.fasterxml.jackson.databind.node.ArrayNode all = json.createArrayNode();
        java.util.ArrayDeque<LogicalPlan> stack = new java.util.ArrayDeque<>();
        stack.push(plan);
        while (!stack.isEmpty()) {
            LogicalPlan p = stack.pop();
            com.fasterxml.jackson.databind.node.ObjectNode n = all.addObject();
            n.put("op", p.getClass().getSimpleName());
            String flagged = PlanDescriber.flagged(p);
            if (flagged != null) {
                n.put("flagged", flagged);
            }
            com.fasterxml.jackson.databind.node.ArrayNode calls = PlanDescriber.windowCalls(p);
            if (calls.size() > 0) {
                n.set("windowCalls", calls);
            }
            for (LogicalPlan c : CollectionConverters.asJava(p.children())) {
                stack.push(c);
            }
        }
        return all.toString();
    }

    /**
     * What a build side computes, as a number equal for build sides that compute the same
     * values within {@code scope} (Spark's canonical form, compared exactly: expression ids
     * and aliases normalized). The copies of a CTE or view that Spark inlines in several
     * places, in one optimizer run or in the runs of one query's subqueries, get one filter,
     * one load, and one file index that Spark's exchange and subquery reuse see as the same.
     */
    public static int buildSignature(String request, int node, int expr, String semi,
                                     String scope) {
        PlanDescriber d = REQUESTS.get(request);
        if (d == null) {
            throw new IllegalStateException("dpp: plan request " + request + " is over");
        }
        LogicalPlan canonical = buildPlan(d, node, expr, semi).canonicalized();
        synchronized (BUILDS) {
            List<LogicalPlan> seen = BUILDS.computeIfAbsent(scope, k -> new ArrayList<>());
            for (int i = 0; i < seen.size(); i++) {
                if (seen.get(i).equals(canonical)) {
                    return i;
                }
            }
            seen.add(canonical);
            return seen.size() - 1;
        }
    }

    /** Node {@code node} projected to key {@code expr}; with {@code semi}
     * ({@code {"node": other, "keys": [b...], "otherKeys": [a...]}}, see
     * {@code dpp.plan_pairs.Prune.build}) only its rows that some row of node {@code other}
     * matches on {@code b_i = a_i} (a left-semi join). A malformed {@code semi} fails the
     * build side (no pruning by it), never builds another one. */
    private static LogicalPlan buildPlan(PlanDescriber d, int node, int expr, String semi) {
        LogicalPlan plan = d.node(node);
        if (semi != null && !semi.isEmpty()) {
            com.fasterxml.jackson.databind.JsonNode s;
            try {
                s = new com.fasterxml.jackson.databind.ObjectMapper().readTree(semi);
            } catch (java.io.IOException e) {
                throw new IllegalArgumentException("dpp: a semi-join narrowing that is not "
                    + "JSON: " + semi, e);
            }
            com.fasterxml.jackson.databind.JsonNode mine = s.path("keys");
            com.fasterxml.jackson.databind.JsonNode other = s.path("otherKeys");
            String bad = WireCheck.problem("semiBuild", s);
            if (bad == null && (mine.size() == 0 || mine.size() != other.size())) {
                bad = "keys and otherKeys are not pairs";
            }
            if (bad != null) {
                throw new IllegalArgumentException("dpp: a semi-join narrowing off the wire "
                    + "contract (" + bad + "): " + semi);
            }
            Expression cond = null;
            for (int i = 0; i < mine.size(); i++) {
                Expression eq = new org.apache.spark.sql.catalyst.expressions.EqualTo(
                    d.expression(mine.get(i).asInt()), d.expression(other.get(i).asInt()));
                cond = cond == null ? eq
                    : new org.apache.spark.sql.catalyst.expressions.And(cond, eq);
            }
            plan = new org.apache.spark.sql.catalyst.plans.logical.Join(plan,
                d.node(s.path("node").asInt()),
                org.apache.spark.sql.catalyst.plans.LeftSemi$.MODULE$, Option.apply(cond),
                org.apache.spark.sql.catalyst.plans.logical.JoinHint$.MODULE$.NONE());
        }
        Expression key = d.expression(expr);
        Alias alias = new Alias(key, "dpp_key", NamedExpression$.MODULE$.newExprId(),
            CollectionConverters.asScala(new ArrayList<String>()).toList(), Option.empty(),
            CollectionConverters.asScala(new ArrayList<String>()).toList());
        List<NamedExpression> list = new ArrayList<>();
        list.add(alias);
        return new Project(CollectionConverters.asScala(list).toList(), plan);
    }

    /**
     * An evaluator of request {@code request}'s key expression {@code expr} over partition
     * values, its attributes {@code refs} (exprIds, in the order the values will come) bound
     * to the row's positions. Called by Python while the rule waits, like
     * {@link #buildDataset}; the evaluator outlives the request.
     */
    public static KeyEvaluator keyEvaluator(String request, int expr, long[] refs) {
        PlanDescriber d = REQUESTS.get(request);
        if (d == null) {
            throw new IllegalStateException("dpp: plan request " + request + " is over");
        }
        return new KeyEvaluator(d.expression(expr), refs,
            Compat.sessionState(d.session()).conf().sessionLocalTimeZone());
    }

    /** The rule wrapped relations for the query running as execution {@code scope}. */
    static void opened(String scope) {
        OPEN_SCOPES.add(scope);
    }

    /**
     * Tells Python when an execution whose relations dpp wrapped ends: a wrapped relation Spark
     * never listed (a scan AQE found it need not run) would otherwise keep the query's report
     * from being written. Runs on Spark's listener bus; the call is bounded and off that
     * thread.
     */
    static final class ExecutionEnds extends org.apache.spark.scheduler.SparkListener {
        @Override
        public void onOtherEvent(org.apache.spark.scheduler.SparkListenerEvent event) {
            String scope;
            if (event instanceof org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd) {
                scope = Long.toString(((org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd)
                    event).executionId());
            } else {
                scope = connectOperationEnd(event);
            }
            if (scope == null || !OPEN_SCOPES.remove(scope)) {
                return;
            }
            List<Function<String, String>> bridges;
            synchronized (BRIDGES) {
                bridges = new ArrayList<>(BRIDGES.values());
            }
            String message = new com.fasterxml.jackson.databind.ObjectMapper().createObjectNode()
                .put("op", "end").put("scope", scope).toString();   // a tag holds a user's id
            for (Function<String, String> b : bridges) {
                CALLS.submit(() -> call(b, message, 30.0));
            }
        }
    }

    /** Spark Connect's events that end an operation (its classes are not on every driver's
     * class path, so they are known by name): the operation's scope, or null. */
    private static final java.util.Set<String> CONNECT_ENDS = new java.util.HashSet<>(
        java.util.Arrays.asList("SparkListenerConnectOperationFinished",
            "SparkListenerConnectOperationFailed", "SparkListenerConnectOperationCanceled",
            "SparkListenerConnectOperationClosed"));

    static String connectOperationEnd(org.apache.spark.scheduler.SparkListenerEvent event) {
        if (!CONNECT_ENDS.contains(event.getClass().getSimpleName())) {
            return null;
        }
        try {
            return CONNECT_SCOPE + event.getClass().getMethod("jobTag").invoke(event);
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    /**
     * The scope of an optimizer run: Spark's execution id, or, where a Spark Connect operation
     * optimizes outside one (Connect plans a query before it executes it), the operation's job
     * tag, which its end event names too; null for neither.
     */
    static String scope(org.apache.spark.SparkContext sc) {
        String execution = sc.getLocalProperty(EXECUTION_ID);
        if (execution != null) {
            return execution;
        }
        String tags = sc.getLocalProperty(JOB_TAGS);
        if (tags != null) {
            for (String tag : tags.split(",")) {
                if (tag.startsWith(CONNECT_OPERATION)) {
                    return CONNECT_SCOPE + tag;
                }
            }
        }
        return null;
    }

    static final class Builder extends AbstractFunction1<SparkSession, Rule<LogicalPlan>>
            implements java.io.Serializable {
        @Override
        public Rule<LogicalPlan> apply(SparkSession session) {
            return new DppRule(session);
        }
    }
}
