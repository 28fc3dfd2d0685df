package dpp.tests;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

import dpp.hadoop.CountingLocalFileSystem;

/**
 * The test session's {@code file:} filesystem: the counting one (hive_splits), whose raw
 * filesystem sets permissions with java.nio instead of forking a {@code chmod} process.
 *
 * <p>Without Hadoop's native library, {@link RawLocalFileSystem#setPermission} runs
 * {@code chmod} in a child process, and it is called for every file and folder Spark creates
 * (data files and their {@code .crc} files alike): on a busy two-core machine that was ~40 ms
 * per file, 21 s for a Spark write of 500 partitions (2 s with this class). The permissions
 * set are the same; a mode java.nio cannot express (setuid, setgid, sticky) still goes
 * through Hadoop's own {@code chmod}.
 */
public class NioChmodCountingFileSystem extends CountingLocalFileSystem {

  /** Hadoop's raw local filesystem with {@link #setPermission} done in-process. */
  static final class NioChmodRaw extends RawLocalFileSystem {
    private static final PosixFilePermission[] BITS = {
      PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
      PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
      PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
      PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
      PosixFilePermission.OWNER_READ};

    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
      int mode = permission.toShort();
      if ((mode & ~0777) != 0) {
        super.setPermission(p, permission);
        return;
      }
      Set<PosixFilePermission> perms = EnumSet.noneOf(PosixFilePermission.class);
      for (int i = 0; i < BITS.length; i++) {
        if ((mode & (1 << i)) != 0) {
          perms.add(BITS[i]);
        }
      }
      try {
        Files.setPosixFilePermissions(pathToFile(p).toPath(), perms);
      } catch (UnsupportedOperationException e) {   // not a POSIX filesystem
        super.setPermission(p, permission);
      }
    }
  }

  public NioChmodCountingFileSystem() {
    super();
    fs = new NioChmodRaw();   // before initialize(), which initializes the raw filesystem
  }
}
