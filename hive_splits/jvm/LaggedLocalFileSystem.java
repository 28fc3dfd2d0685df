package dpp.hadoop;

import java.io.File;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * The local disk under a scheme of its own, {@code lagfs:///local/path}, with an object store's
 * latency injected into each metadata request: a delay per LIST (a folder listed) and per HEAD
 * (one path's status), both counted. Benchmarks read local data through it to <em>measure</em>
 * what listing costs at object-store latency, with Spark's own reader ({@code
 * spark.hadoop.fs.lagfs.impl}) and dpp's Hadoop lister alike, instead of projecting it from
 * counts.
 *
 * <p>Delays, in milliseconds (fractions allowed), from the Hadoop configuration when the
 * filesystem is created: {@code fs.lagfs.list.ms} and {@code fs.lagfs.head.ms}, default 0.
 * Hadoop caches one instance per scheme, authority and user, so settings changed later reach
 * no cached instance (unless {@code fs.lagfs.impl.disable.cache} is true); {@link
 * #setDelays(double, double)} sets them at runtime for every instance in this JVM, until
 * {@link #clearDelays()}.
 *
 * <p>A listing of more than {@link #PAGE} entries costs one LIST per page of them, as an
 * object store pages its listings.
 *
 * <p>One request of a caller costs one delay and one count, however the local filesystem
 * implements it: {@code RawLocalFileSystem.listStatus} takes each child's status with {@code
 * getFileStatus}, {@code listLocatedStatus} and {@code listStatusIterator} list through {@code
 * listStatus}, and {@code open} checks the file's status first; those inner calls are neither
 * delayed nor counted (a thread-local depth, as in {@link CountingLocalFileSystem}). Counts go
 * into {@link CountingLocalFileSystem#counts()} (which {@code hive_splits.storage_calls} reads)
 * and into this class's own {@link #counts()}. Opening a file is counted as OPEN, not delayed.
 *
 * <p>Statuses are Hadoop's own, except where they would read their permissions from a {@code
 * file:} URI (Hadoop's status of a local file without its native library, which fails on any
 * other scheme): those are {@link LocalStatus}es, loading owner, group and permissions through
 * java.nio when asked (a serialized status asks; Spark's reader does not).
 *
 * <p>Raw (no checksum files): data written by other tools, e.g. pyarrow, has no {@code .crc}
 * files to check, and an object store would not read any. Only reading is modelled: writes
 * work as on the local disk, but the status checks made inside them (Hadoop's, in {@code
 * create} and {@code mkdirs}) are counted and delayed as HEADs.
 */
public class LaggedLocalFileSystem extends RawLocalFileSystem {
  public static final String SCHEME = "lagfs";
  public static final String LIST_MS = "fs.lagfs.list.ms";
  public static final String HEAD_MS = "fs.lagfs.head.ms";

  // static: getUri() is called from RawLocalFileSystem's constructor (its working directory
  // is qualified with it), before any field of this class is set
  private static final URI NAME = URI.create(SCHEME + ":///");

  private static final AtomicLong LIST = new AtomicLong();
  private static final AtomicLong HEAD = new AtomicLong();
  private static final AtomicLong OPEN = new AtomicLong();
  private static final AtomicLong INJECTED_NANOS = new AtomicLong();
  // runtime delays for every instance (nanoseconds); negative: none, each instance's own apply
  private static volatile long listOverrideNanos = -1;
  private static volatile long headOverrideNanos = -1;
  // depth of requests in progress on this thread: only the outermost is delayed and counted
  private static final ThreadLocal<int[]> DEPTH = ThreadLocal.withInitial(() -> new int[1]);

  private static final int KIND_LIST = 0;
  private static final int KIND_HEAD = 1;
  private static final int KIND_OPEN = 2;

  private volatile long listNanos;
  private volatile long headNanos;

  @FunctionalInterface
  private interface Request<T> {
    T call() throws IOException;
  }

  // ------------------------------------------------------------------ configuration, counts

  /**
   * Delays of every instance in this JVM from now on (milliseconds, 0 or more), over what the
   * configuration said; for a running session, whose instance Hadoop has cached.
   */
  public static void setDelays(double listMs, double headMs) {
    long list = toNanos(listMs, "list delay");
    long head = toNanos(headMs, "head delay");
    listOverrideNanos = list;
    headOverrideNanos = head;
  }

  /** Back to each instance's configured delays ({@code fs.lagfs.list.ms}, {@code head.ms}). */
  public static void clearDelays() {
    listOverrideNanos = -1;
    headOverrideNanos = -1;
  }

  /** {LIST, HEAD, OPEN} made through this filesystem so far in this JVM. */
  public static long[] counts() {
    return new long[] {LIST.get(), HEAD.get(), OPEN.get()};
  }

  /** Total delay injected so far in this JVM, in milliseconds: the delays asked for (the
   * sum of each request's configured delay), not the time the sleeps took. */
  public static double injectedMillis() {
    return INJECTED_NANOS.get() / 1e6;
  }

  /** The delay a LIST through this instance gets now, in milliseconds. */
  public double listDelayMillis() {
    return effective(listOverrideNanos, listNanos) / 1e6;
  }

  /** The delay a HEAD through this instance gets now, in milliseconds. */
  public double headDelayMillis() {
    return effective(headOverrideNanos, headNanos) / 1e6;
  }

  private static long effective(long override, long own) {
    return override >= 0 ? override : own;
  }

  private static long toNanos(double ms, String what) {
    if (!(ms >= 0) || Double.isInfinite(ms)) {
      throw new IllegalArgumentException(what + " must be a finite number of milliseconds >= 0, "
          + "not " + ms);
    }
    return Math.round(ms * 1e6);
  }

  // ------------------------------------------------------------------ the filesystem

  @Override
  public String getScheme() {
    return SCHEME;
  }

  /** {@code lagfs:///}: statuses, qualified paths and the working directory come back as
   * {@code lagfs:/...}, and {@code checkPath} takes {@code lagfs:} paths (without authority). */
  @Override
  public URI getUri() {
    return NAME;
  }

  @Override
  public void initialize(URI uri, Configuration conf) throws IOException {
    super.initialize(uri, conf);
    listNanos = toNanos(conf.getDouble(LIST_MS, 0), LIST_MS);
    headNanos = toNanos(conf.getDouble(HEAD_MS, 0), HEAD_MS);
  }

  @Override
  public FileStatus[] listStatus(Path f) throws IOException {
    boolean outermost = DEPTH.get()[0] == 0;
    FileStatus[] out = request(KIND_LIST, () -> listLocal(f));
    for (int i = 0; i < out.length; i++) {
      out[i] = LocalStatus.of(out[i]);
    }
    if (outermost) {
      // an object store answers a listing in pages of PAGE entries: each page after the
      // first is one more request (S3's ListObjectsV2 returns at most 1,000 keys)
      for (int more = (out.length - 1) / PAGE; more > 0; more--) {
        LIST.incrementAndGet();
        CountingLocalFileSystem.countList();
        lag(effective(listOverrideNanos, listNanos));
      }
    }
    return out;
  }

  /**
   * A folder's statuses read with java.nio, one attribute read per entry: Hadoop's local
   * listing makes each through {@code getFileStatus} (several system calls and objects
   * apiece, seconds at 100,000 entries), a cost of the local disk no object store has (it
   * answers a page of entries in one reply), which would be measured beside the injected
   * delays. A file, or anything unexpected, is listed by Hadoop's.
   */
  private FileStatus[] listLocal(Path f) throws IOException {
    File dir = pathToFile(f);
    if (!dir.isDirectory()) {
      return super.listStatus(f);
    }
    long block = getDefaultBlockSize(f);
    java.util.List<FileStatus> out = new java.util.ArrayList<>();
    try (java.nio.file.DirectoryStream<java.nio.file.Path> ds =
             Files.newDirectoryStream(dir.toPath())) {
      for (java.nio.file.Path child : ds) {
        java.nio.file.attribute.BasicFileAttributes a;
        try {
          a = Files.readAttributes(child, java.nio.file.attribute.BasicFileAttributes.class);
        } catch (java.nio.file.NoSuchFileException e) {
          continue;   // removed while listed
        }
        // the path as Hadoop's local status names it: qualified by this filesystem
        Path path = new Path(child.toAbsolutePath().toString())
            .makeQualified(getUri(), getWorkingDirectory());
        out.add(new LocalStatus(a.size(), a.isDirectory(), block,
            a.lastModifiedTime().toMillis(), a.lastAccessTime().toMillis(), path));
      }
    } catch (java.nio.file.NoSuchFileException e) {
      throw new java.io.FileNotFoundException("File " + f + " does not exist");
    }
    return out.toArray(new FileStatus[0]);
  }

  /** Entries one LIST request returns: a longer listing costs one request per page. */
  public static final int PAGE = 1000;

  @Override
  public RemoteIterator<LocatedFileStatus> listLocatedStatus(Path f) throws IOException {
    // FileSystem's lists eagerly (listStatus, inside this request)
    return request(KIND_LIST, () -> super.listLocatedStatus(f));
  }

  @Override
  public RemoteIterator<FileStatus> listStatusIterator(Path p) throws IOException {
    // FileSystem's DirListingIterator lists in its constructor (listStatus, inside this request)
    return request(KIND_LIST, () -> super.listStatusIterator(p));
  }

  @Override
  public FileStatus getFileStatus(Path f) throws IOException {
    return LocalStatus.of(request(KIND_HEAD, () -> super.getFileStatus(f)));
  }

  @Override
  public FileStatus getFileLinkStatus(Path f) throws IOException {
    return LocalStatus.of(request(KIND_HEAD, () -> super.getFileLinkStatus(f)));
  }

  @Override
  public boolean exists(Path f) throws IOException {
    // RawLocalFileSystem answers exists() from java.io.File, not through getFileStatus
    return request(KIND_HEAD, () -> super.exists(f));
  }

  @Override
  public FSDataInputStream open(Path f, int bufferSize) throws IOException {
    // RawLocalFileSystem.open takes the file's status first: part of the open, not a HEAD
    FSDataInputStream in = request(KIND_OPEN, () -> super.open(f, bufferSize));
    return new FSDataInputStream(CountingInputStream.of(in,
                                                         CountingLocalFileSystem.readCounter()));
  }

  private <T> T request(int kind, Request<T> call) throws IOException {
    int[] depth = DEPTH.get();
    if (depth[0] == 0) {
      switch (kind) {
        case KIND_LIST:
          LIST.incrementAndGet();
          CountingLocalFileSystem.countList();
          lag(effective(listOverrideNanos, listNanos));
          break;
        case KIND_HEAD:
          HEAD.incrementAndGet();
          CountingLocalFileSystem.countHead();
          lag(effective(headOverrideNanos, headNanos));
          break;
        default:
          OPEN.incrementAndGet();
          CountingLocalFileSystem.countOpen();
      }
    }
    depth[0]++;
    try {
      return call.call();
    } finally {
      depth[0]--;
    }
  }

  private static void lag(long nanos) throws InterruptedIOException {
    if (nanos <= 0) {
      return;
    }
    INJECTED_NANOS.addAndGet(nanos);
    try {
      Thread.sleep(nanos / 1_000_000L, (int) (nanos % 1_000_000L));
    } catch (InterruptedException e) {   // a cancelled task: give up as Hadoop's clients do
      Thread.currentThread().interrupt();
      InterruptedIOException io = new InterruptedIOException("interrupted in the injected "
          + "delay of " + SCHEME + ":");
      io.initCause(e);
      throw io;
    }
  }

  /**
   * A local file's status under {@code lagfs:}, whose owner, group and permissions are read
   * with java.nio on first use. Hadoop's {@code RawLocalFileSystem} without its native library
   * gives statuses that load them lazily from {@code new File(getPath().toUri())}, which throws
   * for any scheme but {@code file:} ("URI scheme is not \"file\""): Hadoop's {@code
   * LocatedFileStatus} and a status's {@code write} (dpp's Hadoop lister serializes the
   * statuses of a folder) both ask for them.
   */
  static final class LocalStatus extends FileStatus {
    private static final long serialVersionUID = 1L;
    private static final PosixFilePermission[] BITS = PosixFilePermission.values();
    private volatile boolean loaded;

    /** {@code status} itself when its getters are plain ones, else a {@link LocalStatus}. */
    static FileStatus of(FileStatus status) throws IOException {
      if (status == null || status.getClass() == FileStatus.class
          || status instanceof LocalStatus) {
        return status;
      }
      return new LocalStatus(status);
    }

    LocalStatus(long length, boolean dir, long blockSize, long mtime, long atime, Path path) {
      super(length, dir, 1, blockSize, mtime, atime, null, null, null, null, path);
    }

    private LocalStatus(FileStatus s) throws IOException {
      // no getter of the permission info: that is what would fail
      super(s.getLen(), s.isDirectory(), s.getReplication(), s.getBlockSize(),
          s.getModificationTime(), s.getAccessTime(), null, null, null,
          s.isSymlink() ? s.getSymlink() : null, s.getPath());
    }

    private void load() {
      if (loaded) {
        return;
      }
      synchronized (this) {
        if (loaded) {
          return;
        }
        File file = new File(getPath().toUri().getPath());
        try {
          LinkOption[] how = isSymlink() ? new LinkOption[] {LinkOption.NOFOLLOW_LINKS}
              : new LinkOption[0];
          PosixFileAttributes attrs =
              Files.readAttributes(file.toPath(), PosixFileAttributes.class, how);
          int mode = 0;
          for (PosixFilePermission p : attrs.permissions()) {
            mode |= 1 << (BITS.length - 1 - p.ordinal());   // OWNER_READ is 0400
          }
          setPermission(new FsPermission((short) mode));
          setOwner(attrs.owner().getName());
          setGroup(attrs.group().getName());
        } catch (IOException | UnsupportedOperationException e) {
          // gone since it was listed, or not a POSIX filesystem: Hadoop's defaults stay
        }
        loaded = true;
      }
    }

    @Override
    public FsPermission getPermission() {
      load();
      return super.getPermission();
    }

    @Override
    public String getOwner() {
      load();
      return super.getOwner();
    }

    @Override
    public String getGroup() {
      load();
      return super.getGroup();
    }
  }

  @Override
  public String toString() {
    return "LaggedLocalFileSystem(list " + listDelayMillis() + " ms, head " + headDelayMillis()
        + " ms)";
  }
}
