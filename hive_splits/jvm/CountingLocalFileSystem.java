package dpp.hadoop;

import java.io.IOException;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;

/**
 * Hadoop's local filesystem, counting the metadata requests made through it: LIST (a folder
 * listed) and HEAD (one path's status). Object stores and HDFS count these themselves in their
 * storage statistics; the local filesystem does not, so benchmarks on local data install this
 * one ({@code spark.hadoop.fs.file.impl}) to count what Spark's reader asks for, the way an
 * object store would bill it.
 */
public class CountingLocalFileSystem extends LocalFileSystem {
  private static final AtomicLong LIST = new AtomicLong();
  private static final AtomicLong HEAD = new AtomicLong();

  /** {LIST, HEAD} counted so far in this JVM. */
  public static long[] counts() {
    return new long[] {LIST.get(), HEAD.get()};
  }

  @Override
  public FileStatus[] listStatus(Path f) throws IOException {
    LIST.incrementAndGet();
    return super.listStatus(f);
  }

  @Override
  public RemoteIterator<LocatedFileStatus> listLocatedStatus(Path f) throws IOException {
    LIST.incrementAndGet();
    return super.listLocatedStatus(f);
  }

  @Override
  public FileStatus getFileStatus(Path f) throws IOException {
    HEAD.incrementAndGet();
    return super.getFileStatus(f);
  }
}
