package dpp.hadoop;

import java.io.IOException;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.hadoop.fs.FSDataInputStream;
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
 * object store would bill it. Opening a file is counted as OPEN; the status lookups the local
 * checksummed filesystem makes inside its own {@code open} (of the file and its .crc) are not
 * requests an object store would see, and are not counted as HEAD. {@link
 * LaggedLocalFileSystem} ({@code lagfs:}) adds its requests to the same counts.
 */
public class CountingLocalFileSystem extends LocalFileSystem {
  private static final AtomicLong LIST = new AtomicLong();
  private static final AtomicLong HEAD = new AtomicLong();
  private static final AtomicLong OPEN = new AtomicLong();
  // bytes read through the files opened here, by who opened them: a task of a dpp build
  // side (job group dpp-build-*), any other task, code outside a task (the driver)
  private static final AtomicLong READ_BUILD = new AtomicLong();
  private static final AtomicLong READ_TASK = new AtomicLong();
  private static final AtomicLong READ_DRIVER = new AtomicLong();
  private static final ThreadLocal<int[]> IN_OPEN = ThreadLocal.withInitial(() -> new int[1]);

  /** {LIST, HEAD, OPEN} counted so far in this JVM. */
  public static long[] counts() {
    return new long[] {LIST.get(), HEAD.get(), OPEN.get()};
  }

  /** Bytes read so far in this JVM through files opened here: {by dpp build-side tasks, by
   * other tasks, outside tasks} (see {@link CountingInputStream}). */
  public static long[] bytesRead() {
    return new long[] {READ_BUILD.get(), READ_TASK.get(), READ_DRIVER.get()};
  }

  /** The counter for a file opened by the calling thread. */
  static AtomicLong readCounter() {
    org.apache.spark.TaskContext task = org.apache.spark.TaskContext.get();
    if (task == null) {
      return READ_DRIVER;
    }
    String group = task.getLocalProperty("spark.jobGroup.id");
    return group != null && group.startsWith("dpp-build-") ? READ_BUILD : READ_TASK;
  }

  // for the other filesystems of this package (LaggedLocalFileSystem), whose requests are
  // counted here too, so that counts() covers every scheme this package installs
  static void countList() {
    LIST.incrementAndGet();
  }

  static void countHead() {
    HEAD.incrementAndGet();
  }

  static void countOpen() {
    OPEN.incrementAndGet();
  }

  @Override
  public FSDataInputStream open(Path f, int bufferSize) throws IOException {
    OPEN.incrementAndGet();
    int[] depth = IN_OPEN.get();
    depth[0]++;
    try {
      return new FSDataInputStream(CountingInputStream.of(super.open(f, bufferSize),
                                                           readCounter()));
    } finally {
      depth[0]--;
    }
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
    if (IN_OPEN.get()[0] == 0) {
      HEAD.incrementAndGet();
    }
    return super.getFileStatus(f);
  }
}
