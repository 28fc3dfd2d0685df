package dpp.spark;

import java.util.List;

import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import scala.collection.Seq;

/**
 * {@link FileIndex}'s methods whose signatures name Scala's `Seq`, for Spark 3.5 (Scala 2.12: `scala.collection.Seq`).
 * dpp's file indexes extend this and implement Java-typed {@link #roots} and {@link #list}.
 */
abstract class CompatFileIndex implements FileIndex {
    abstract List<Path> roots();

    abstract List<PartitionDirectory> list(scala.collection.Seq<Expression> partitionFilters,
                                           scala.collection.Seq<Expression> dataFilters);

    @Override
    public final Seq<Path> rootPaths() {
        return CollectionConverters.asScala(roots()).toList();
    }

    @Override
    public final Seq<PartitionDirectory> listFiles(Seq<Expression> partitionFilters,
                                                   Seq<Expression> dataFilters) {
        return CollectionConverters.asScala(list(partitionFilters, dataFilters)).toList();
    }

    /** {@code index.listFiles} with filters of either Scala's `Seq`. */
    static List<PartitionDirectory> listFiles(FileIndex index,
                                              scala.collection.Seq<Expression> partitionFilters,
                                              scala.collection.Seq<Expression> dataFilters) {
        return CollectionConverters.asJava(
            index.listFiles(partitionFilters.toList(), dataFilters.toList()));
    }
}
