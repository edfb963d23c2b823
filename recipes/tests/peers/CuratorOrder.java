// Prints how Curator 5.4 orders the children of a lock path, with Curator's own sorting code:
// the names are read from stdin, one a line, and printed back in Curator's order.
//
// Usage: java -cp <curator jars>:<dir> CuratorOrder MODE
//   MODE mutex   InterProcessMutex, semaphore locks: LockInternals.getSortedChildren("lock-",
//                StandardLockInternalsDriver)
//   MODE rw      InterProcessReadWriteLock: its private SortingLockInternalsDriver
//   MODE latch   LeaderLatch: getSortedChildren("latch-", standardFixForSorting)
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Constructor;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.apache.curator.framework.recipes.locks.LockInternals;
import org.apache.curator.framework.recipes.locks.LockInternalsSorter;
import org.apache.curator.framework.recipes.locks.StandardLockInternalsDriver;

public class CuratorOrder {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<String> names = new ArrayList<>();
        String line;
        while ((line = in.readLine()) != null) {
            if (!line.isEmpty()) {
                names.add(line);
            }
        }
        List<String> sorted;
        switch (args[0]) {
            case "mutex":
                sorted = LockInternals.getSortedChildren("lock-", new StandardLockInternalsDriver(), names);
                break;
            case "latch":
                LockInternalsSorter latchSorter = (str, lockName) -> StandardLockInternalsDriver.standardFixForSorting(str, lockName);
                sorted = LockInternals.getSortedChildren("latch-", latchSorter, names);
                break;
            case "rw": {
                Class<?> c = Class.forName("org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock$SortingLockInternalsDriver");
                Constructor<?> make = c.getDeclaredConstructor();
                make.setAccessible(true);
                LockInternalsSorter rwSorter = (LockInternalsSorter) make.newInstance();
                // The read-write lock sorts by the read marker, its driver strips both.
                sorted = LockInternals.getSortedChildren("__READ__", rwSorter, names);
                break;
            }
            default:
                throw new IllegalArgumentException("unknown mode " + args[0]);
        }
        for (String name : sorted) {
            System.out.println(name);
        }
        System.out.flush();
    }
}
