package dpp.spark;

import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;

import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

/**
 * The driver's steps around a native build side on a classic session, one py4j round trip
 * each.
 *
 * <p>Why: Python made each of them from several py4j calls (Spark's size estimate walked the
 * plan node by node, the job group was read and restored property by property, the status
 * tracker's job ids came back as an array read element by element), and every call returned
 * objects whose Python handles are released by one more round trip each. A star join ran
 * about 150 round trips through the bridge, ~110 µs of CPU each between the two processes;
 * with many queries at once on two cores that CPU is the driver's throughput. The results are
 * the ones the Python steps computed; Python falls back to them where this class is missing
 * (a hook jar of an older build).
 */
public final class BuildSide {
    private BuildSide() {
    }

    private static final ObjectMapper JSON = new ObjectMapper();

    /** The local properties a job group sets ({@code SparkContext.setJobGroup}). */
    private static final String[] JOB_PROPS = {
        "spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel"};

    /**
     * Spark's size estimate (bytes, as text) of {@code limited}'s optimized plan below its
     * limits, a newline, and the session's {@code spark.sql.autoBroadcastJoinThreshold} as
     * set (empty when unset). The estimate is read from the plan the collection then runs:
     * the query execution keeps its optimized plan.
     */
    public static String sizeBelowLimits(Dataset<?> limited) {
        LogicalPlan node = limited.queryExecution().optimizedPlan();
        while (("GlobalLimit".equals(node.nodeName()) || "LocalLimit".equals(node.nodeName()))
                && node.children().size() == 1) {
            node = node.children().head();
        }
        String size = node.stats().sizeInBytes().toString();
        String raw = limited.sparkSession().conf().get("spark.sql.autoBroadcastJoinThreshold",
            null);
        return size + "\n" + (raw == null ? "" : raw);
    }

    /**
     * Puts the calling thread's next jobs in job group {@code group} (interrupted on cancel),
     * described by {@code description}; returns the properties it replaced, for
     * {@link #restoreJobGroup}: a JSON array, null for a property that was not set.
     */
    public static String enterJobGroup(JavaSparkContext jsc, String group, String description) {
        SparkContext sc = jsc.sc();
        ArrayNode saved = JSON.createArrayNode();
        for (String k : JOB_PROPS) {
            String v = sc.getLocalProperty(k);
            if (v == null) {
                saved.addNull();
            } else {
                saved.add(v);
            }
        }
        sc.setJobGroup(group, description, true);
        return saved.toString();
    }

    /** Restores the properties {@link #enterJobGroup} replaced (null: the property unset). */
    public static void restoreJobGroup(JavaSparkContext jsc, String saved) throws Exception {
        SparkContext sc = jsc.sc();
        JsonNode values = JSON.readTree(saved);
        for (int i = 0; i < JOB_PROPS.length; i++) {
            JsonNode v = values.get(i);
            sc.setLocalProperty(JOB_PROPS[i], v == null || v.isNull() ? null : v.asText());
        }
    }

    /** Of the job groups in {@code groups} (one per line), those Spark's status tracker knows
     * no job of yet, one per line. */
    public static String withoutJobs(JavaSparkContext jsc, String groups) {
        SparkContext sc = jsc.sc();
        List<String> out = new ArrayList<>();
        for (String g : groups.split("\n", -1)) {
            if (g.isEmpty()) {
                continue;
            }
            if (sc.statusTracker().getJobIdsForGroup(g).length == 0) {
                out.add(g);
            }
        }
        return String.join("\n", out);
    }
}
