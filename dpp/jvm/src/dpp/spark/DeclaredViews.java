package dpp.spark;

import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.AliasIdentifier;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.catalog.TemporaryViewRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias;
import org.apache.spark.sql.catalyst.rules.Rule;
import scala.Option;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractPartialFunction;

/**
 * The tables a {@code dpp connect-server} declares ({@code spark.dpp.tables.NAME=FOLDER}), read
 * as {@code spark.read.parquet(FOLDER)} reads them at the moment of each query, in the querying
 * session.
 *
 * <p>The server makes each one a global temporary view of {@code SELECT * FROM parquet.`FOLDER`},
 * the one kind of name every session of a driver sees (and lists, and describes). A view is not
 * quite the reader: Spark keeps the columns and types it had when the server declared it (a
 * later query casts the folder's columns up to them, and fails where that is no up-cast, e.g. a
 * partition column a client's session types as a string; a column added to the folder is not
 * seen), and analyses it under the settings captured then. This rule runs before Spark resolves
 * relations (Spark's hint batch, in every session the server makes) and puts the view's own text,
 * parsed afresh, where a query names the view: Spark's file-source resolution then lists and
 * types the folder as that session's {@code spark.read.parquet} would, and the name still
 * qualifies its columns. A view a user dropped or redefined under the same name no longer has
 * dpp's text and is left to Spark. A folder of at least {@code spark.dpp.declaredTables
 * .keptListing} partitions is put there as the kept-partition index's relation instead
 * ({@link FolderIndex}: the same relation as the reader's, its partitions known by name, a
 * partition's files listed only when a scan keeps it), where the index proves it reads what
 * the reader reads.
 */
final class DeclaredViews extends Rule<LogicalPlan> {
    /** view name (as the catalog formats it: lower-cased) → the text dpp defined it by. */
    private static final Map<String, String> TEXTS = new ConcurrentHashMap<>();

    private final SparkSession session;

    DeclaredViews(SparkSession session) {
        this.session = session;
    }

    /** view name → the folder it reads (a URI, as Spark's reader is given it). */
    private static final Map<String, String> FOLDERS = new ConcurrentHashMap<>();

    static void declare(String name, String text, String folder) {
        String key = name.toLowerCase(Locale.ROOT);
        TEXTS.put(key, text.trim());
        if (folder != null) {
            FOLDERS.put(key, folder);
        } else {
            FOLDERS.remove(key);
        }
    }

    /** The setting that sends a declared folder of at least that many partitions through the
     * kept-partition index ({@link FolderIndex}), as on a classic session. */
    static final String KEPT_LISTING = "spark.dpp.declaredTables.keptListing";

    /** The view's relation over the kept-partition index, or null (the view's text then):
     * what {@code spark.read.parquet(FOLDER)} reads, proved from the folder's names and first
     * data file, without listing every partition's files at each query. */
    private LogicalPlan overIndex(String view) {
        String folder = FOLDERS.get(view.toLowerCase(Locale.ROOT));
        if (folder == null) {
            return null;
        }
        String enabled = session.conf().get("spark.dpp.enabled", "true").trim()
            .toLowerCase(Locale.ROOT);
        if (java.util.Arrays.asList("false", "0", "no", "off").contains(enabled)) {
            return null;   // dpp off in this session: Spark's reader, nothing of dpp's
        }
        String setting = session.conf().get(KEPT_LISTING, "1000").trim().toLowerCase(Locale.ROOT);
        int min;
        try {
            min = Integer.parseInt(setting.startsWith("+") ? setting.substring(1) : setting);
        } catch (NumberFormatException e) {
            return null;   // off (or a value dpp's settings refuse, said there)
        }
        if (min < 0) {
            return null;
        }
        org.apache.spark.sql.Dataset<org.apache.spark.sql.Row> ds =
            FolderIndex.open(session, folder, min);
        return ds == null ? null : ds.queryExecution().analyzed();
    }

    @Override
    public String ruleName() {
        return "dpp.spark.DeclaredViews";
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        if (TEXTS.isEmpty()) {
            return plan;
        }
        try {
            return plan.resolveOperatorsUp(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
                @Override
                public boolean isDefinedAt(LogicalPlan p) {
                    return textOf(p) != null;
                }

                @Override
                public LogicalPlan apply(LogicalPlan p) {
                    String text = textOf(p);
                    if (text == null) {
                        return p;
                    }
                    java.util.List<String> ident = CollectionConverters.asJava(
                        ((UnresolvedRelation) p).multipartIdentifier());
                    try {
                        java.util.List<String> qualifier = new java.util.ArrayList<>(ident);
                        String name = qualifier.remove(qualifier.size() - 1);
                        LogicalPlan read = overIndex(name);
                        if (read == null) {
                            read = Compat.sessionState(session).sqlParser().parsePlan(text);
                        }
                        return new SubqueryAlias(new AliasIdentifier(name,
                            CollectionConverters.asScala(qualifier).toList()), read);
                    } catch (Exception e) {   // Spark 3.5 declares its ParseException
                        return p;
                    }
                }
            });
        } catch (Throwable t) {
            return plan;   // the view as Spark resolves it
        }
    }

    /** The text to parse for {@code p}: a batch read of {@code global_temp.NAME} (no reader
     * options) whose view is still the one dpp declared. */
    private String textOf(LogicalPlan p) {
        if (!(p instanceof UnresolvedRelation)) {
            return null;
        }
        UnresolvedRelation u = (UnresolvedRelation) p;
        if (u.isStreaming() || !u.options().isEmpty()) {
            return null;
        }
        java.util.List<String> ident = CollectionConverters.asJava(u.multipartIdentifier());
        if (ident.size() != 2) {
            return null;
        }
        String globalDb = session.conf().get("spark.sql.globalTempDatabase", "global_temp");
        if (!ident.get(0).equalsIgnoreCase(globalDb)) {
            return null;
        }
        String want = TEXTS.get(ident.get(1).toLowerCase(Locale.ROOT));
        if (want == null) {
            return null;
        }
        Option<TemporaryViewRelation> view =
            Compat.sessionState(session).catalog().getRawGlobalTempView(ident.get(1));
        if (view.isEmpty()) {
            return null;
        }
        Option<String> has = view.get().tableMeta().viewText();
        return has.isDefined() && want.equals(has.get().trim()) ? want : null;
    }

    static final class Builder extends AbstractFunction1<SparkSession, Rule<LogicalPlan>>
            implements java.io.Serializable {
        @Override
        public Rule<LogicalPlan> apply(SparkSession session) {
            return new DeclaredViews(session);
        }
    }
}
