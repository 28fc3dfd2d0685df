package dpp.spark;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Set;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.FileSourceScanExec;
import org.apache.spark.sql.execution.ReusedSubqueryExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.adaptive.QueryStageExec;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.InMemoryFileIndex;
import org.apache.spark.sql.execution.exchange.ReusedExchangeExec;
import org.apache.spark.sql.execution.metric.SQLMetric;
import scala.Option;

/**
 * The file scans of an executed physical plan and their metrics, as one JSON answer.
 *
 * {@code dpp.spark_metrics} reads the same figures node by node through py4j when this class
 * is not loaded; walking a plan that way costs a dozen round trips a node (and three per root
 * path of a scan handed thousands of kept files), which was most of the driver's time spent
 * on a small query's report. The walk is the same: AQE's final plan, query stages, reused
 * exchanges and subqueries, each node once by identity, in the same order.
 */
public final class PlanScans {
    private static final ObjectMapper JSON = new ObjectMapper();

    private PlanScans() {
    }

    public static String describe(SparkPlan root) {
        ArrayNode out = JSON.createArrayNode();
        Set<SparkPlan> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        ArrayDeque<SparkPlan> stack = new ArrayDeque<>();
        stack.addLast(root);
        while (!stack.isEmpty()) {
            SparkPlan node = stack.pollLast();
            if (!seen.add(node)) {
                continue;
            }
            if (node instanceof FileSourceScanExec) {
                out.add(scan((FileSourceScanExec) node));
            }
            for (SparkPlan kid : children(node)) {
                stack.addLast(kid);
            }
        }
        return out.toString();
    }

    private static List<SparkPlan> children(SparkPlan node) {
        List<SparkPlan> kids = new ArrayList<>();
        if (node instanceof AdaptiveSparkPlanExec) {
            kids.add(((AdaptiveSparkPlanExec) node).executedPlan());  // the final plan
        } else if (node instanceof QueryStageExec) {
            kids.add(((QueryStageExec) node).plan());
        } else if (node instanceof ReusedExchangeExec) {
            kids.add(((ReusedExchangeExec) node).child());
        } else if (node instanceof ReusedSubqueryExec) {
            kids.add(((ReusedSubqueryExec) node).child());
        } else {
            kids.addAll(CollectionConverters.asJava(node.children()));
        }
        try {   // DPP and scalar subqueries live in expressions
            kids.addAll(CollectionConverters.asJava(node.subqueries()));
        } catch (RuntimeException e) {
            // a node whose expressions cannot be listed: its subqueries are not walked
        }
        return kids;
    }

    private static long metric(SparkPlan node, String name) {
        Option<SQLMetric> m = node.metrics().get(name);
        return m.isDefined() ? m.get().value() : 0L;
    }

    private static ObjectNode scan(FileSourceScanExec node) {
        ObjectNode s = JSON.createObjectNode();
        FileIndex loc = node.relation().location();
        ArrayNode paths = JSON.createArrayNode();
        for (Path p : CollectionConverters.asJava(loc.rootPaths())) {
            paths.add(p.toUri().getPath());
        }
        String ident = null;
        if (node.tableIdentifier().isDefined()) {
            ident = node.tableIdentifier().get().table().toLowerCase(Locale.ROOT);
        }
        long files = metric(node, "numFiles");
        long listed;
        if (loc instanceof InMemoryFileIndex) {   // it holds exactly the files it listed
            listed = ((InMemoryFileIndex) loc).allFiles().size();
        } else {
            long fixed = metric(node, "staticFilesNum");
            listed = fixed != 0 ? fixed : files;
        }
        s.put("table", ident != null ? ident : paths.size() > 0 ? paths.get(0).asText() : "?");
        s.put("files_read", files);
        s.put("bytes_read", metric(node, "filesSize"));
        s.put("partitions_read", metric(node, "numPartitions"));
        s.put("files_listed", listed);
        s.put("metadata_ms", metric(node, "metadataTime"));
        s.put("rows", metric(node, "numOutputRows"));
        if (ident != null) {
            s.put("catalog_name", ident);
        } else {
            s.putNull("catalog_name");
        }
        s.set("root_paths", paths);
        return s;
    }
}
