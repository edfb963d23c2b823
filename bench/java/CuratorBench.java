// Curator's side of the lock benchmarks: the same workloads as our recipes, on the same server,
// driven over stdin so that the two contestants can alternate round by round.
//
// Usage: java -cp <curator jars>:<dir> CuratorBench <connect string>
// Prints "ready", then reads one command per line and answers with one "result ..." line:
//
//   uncontended PATH N                 N x (acquire + release) on one session
//                                      -> result ops_per_s X
//   contended PATH SESSIONS N          SESSIONS threads, one session each, acquire + release
//                                      until N acquisitions in all
//                                      -> result acq_per_s X handoff_p50_us Y handoff_p99_us Z
//   waiters PATH N SESSIONS            a holder, then N waiters queued over SESSIONS sessions;
//                                      once all are queued ("queued" line, then a line from
//                                      stdin) the holder releases and each waiter takes and
//                                      releases the lock in turn -> result serve_ms X
//   rw PATH READERS WRITERS MILLIS     InterProcessReadWriteLock, one session per thread, each
//                                      looping acquire + release for MILLIS
//                                      -> result read_per_s X write_per_s Y
//   quit
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryNTimes;

public class CuratorBench {
    private static String connect;

    private static CuratorFramework session() throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.newClient(connect, 30000, 15000, new RetryNTimes(3, 100));
        c.start();
        c.blockUntilConnected();
        return c;
    }

    private static List<CuratorFramework> sessions(int n) throws Exception {
        List<CuratorFramework> list = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            list.add(session());
        }
        return list;
    }

    private static void closeAll(List<CuratorFramework> list) {
        for (CuratorFramework c : list) {
            c.close();
        }
    }

    private static long percentile(List<Long> sorted, double q) {
        if (sorted.isEmpty()) {
            return 0;
        }
        int rank = (int) Math.ceil(q * sorted.size());
        rank = Math.max(1, Math.min(sorted.size(), rank));
        return sorted.get(rank - 1);
    }

    private static String uncontended(String path, int n) throws Exception {
        CuratorFramework c = session();
        try {
            InterProcessMutex m = new InterProcessMutex(c, path);
            long start = System.nanoTime();
            for (int i = 0; i < n; i++) {
                m.acquire();
                m.release();
            }
            double secs = (System.nanoTime() - start) / 1e9;
            return "ops_per_s " + (n / secs);
        } finally {
            c.close();
        }
    }

    private static String contended(String path, int sessions, int n) throws Exception {
        List<CuratorFramework> clients = sessions(sessions);
        try {
            AtomicInteger remaining = new AtomicInteger(n);
            AtomicInteger done = new AtomicInteger();
            AtomicLong releasedAt = new AtomicLong(0);
            List<Long> handoffs = Collections.synchronizedList(new ArrayList<>());
            CountDownLatch go = new CountDownLatch(1);
            List<Thread> threads = new ArrayList<>();
            for (CuratorFramework c : clients) {
                InterProcessMutex m = new InterProcessMutex(c, path);
                Thread t = new Thread(() -> {
                    try {
                        go.await();
                        while (remaining.getAndDecrement() > 0) {
                            m.acquire();
                            long now = System.nanoTime();
                            long released = releasedAt.get();
                            if (released != 0) {
                                handoffs.add(now - released);
                            }
                            done.incrementAndGet();
                            releasedAt.set(System.nanoTime());
                            m.release();
                        }
                    } catch (Exception e) {
                        e.printStackTrace();
                    }
                });
                t.start();
                threads.add(t);
            }
            long start = System.nanoTime();
            go.countDown();
            for (Thread t : threads) {
                t.join();
            }
            double secs = (System.nanoTime() - start) / 1e9;
            List<Long> sorted = new ArrayList<>(handoffs);
            Collections.sort(sorted);
            return "acq_per_s " + (done.get() / secs)
                + " handoff_p50_us " + percentile(sorted, 0.5) / 1000.0
                + " handoff_p99_us " + percentile(sorted, 0.99) / 1000.0;
        } finally {
            closeAll(clients);
        }
    }

    private static String waiters(String path, int n, int sessions, BufferedReader in) throws Exception {
        List<CuratorFramework> clients = sessions(sessions);
        try {
            InterProcessMutex holder = new InterProcessMutex(clients.get(0), path);
            holder.acquire();
            CountDownLatch served = new CountDownLatch(n);
            for (int i = 0; i < n; i++) {
                InterProcessMutex m = new InterProcessMutex(clients.get(i % sessions), path);
                Thread t = new Thread(() -> {
                    try {
                        m.acquire();
                        m.release();
                    } catch (Exception e) {
                        e.printStackTrace();
                    }
                    served.countDown();
                });
                t.start();
            }
            // Queued once every waiter has its node under the lock path.
            while (clients.get(0).getChildren().forPath(path).size() < n + 1) {
                Thread.sleep(5);
            }
            System.out.println("queued");
            System.out.flush();
            in.readLine();
            long start = System.nanoTime();
            holder.release();
            served.await();
            return "serve_ms " + (System.nanoTime() - start) / 1e6;
        } finally {
            closeAll(clients);
        }
    }

    private static String rw(String path, int readers, int writers, int millis) throws Exception {
        List<CuratorFramework> clients = sessions(readers + writers);
        try {
            AtomicInteger reads = new AtomicInteger();
            AtomicInteger writes = new AtomicInteger();
            CountDownLatch go = new CountDownLatch(1);
            long[] deadline = new long[1];
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < readers + writers; i++) {
                boolean reader = i < readers;
                InterProcessReadWriteLock lock = new InterProcessReadWriteLock(clients.get(i), path);
                Thread t = new Thread(() -> {
                    try {
                        go.await();
                        while (System.nanoTime() < deadline[0]) {
                            if (reader) {
                                lock.readLock().acquire();
                                reads.incrementAndGet();
                                lock.readLock().release();
                            } else {
                                lock.writeLock().acquire();
                                writes.incrementAndGet();
                                lock.writeLock().release();
                            }
                        }
                    } catch (Exception e) {
                        e.printStackTrace();
                    }
                });
                t.start();
                threads.add(t);
            }
            long start = System.nanoTime();
            deadline[0] = start + millis * 1_000_000L;
            go.countDown();
            for (Thread t : threads) {
                t.join();
            }
            double secs = (System.nanoTime() - start) / 1e9;
            return "read_per_s " + (reads.get() / secs) + " write_per_s " + (writes.get() / secs);
        } finally {
            closeAll(clients);
        }
    }

    public static void main(String[] args) throws Exception {
        connect = args[0];
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split(" ");
            String result;
            try {
                switch (w[0]) {
                    case "uncontended":
                        result = uncontended(w[1], Integer.parseInt(w[2]));
                        break;
                    case "contended":
                        result = contended(w[1], Integer.parseInt(w[2]), Integer.parseInt(w[3]));
                        break;
                    case "waiters":
                        result = waiters(w[1], Integer.parseInt(w[2]), Integer.parseInt(w[3]), in);
                        break;
                    case "rw":
                        result = rw(w[1], Integer.parseInt(w[2]), Integer.parseInt(w[3]), Integer.parseInt(w[4]));
                        break;
                    case "quit":
                        return;
                    default:
                        result = null;
                }
            } catch (Exception e) {
                System.out.println("error " + e);
                System.out.flush();
                continue;
            }
            System.out.println(result == null ? "error unknown command " + w[0] : "result " + result);
            System.out.flush();
        }
    }
}
