// A Curator peer for the interoperability tests, driven over stdin/stdout.
//
// Usage: java -cp <curator jars>:<dir> CuratorPeer <connect string>
// Prints "ready" once connected, then reads one command per line and answers
// with one line per event. Commands:
//
//   lock PATH                    acquire an InterProcessMutex; prints "locked <czxid>"
//   unlock                       release it; prints "unlocked"
//   read-lock PATH / write-lock PATH    InterProcessReadWriteLock; prints "read-locked <czxid>" / "write-locked <czxid>"
//   read-unlock / write-unlock   prints "read-unlocked" / "write-unlocked"
//   mutex-loop PATH N HOLD_MS RES       N rounds of: acquire, enter the checked resource RES,
//                                       hold, leave, release; prints "enter <czxid>" per round and
//                                       "done N"; a second holder inside RES prints "violation ..."
//   rw-loop PATH MODE N HOLD_MS RES     the same with the read (MODE=read) or write lock
//   sem-acquire PATH N           take a lease of an InterProcessSemaphoreV2 with N leases;
//                                prints "leased <czxid>"
//   sem-release                  return the oldest lease taken; prints "returned"
//   latch PATH ID                start a LeaderLatch; prints "leader ID" / "follower ID" on changes
//   latch-close                  close it; prints "latch-closed"
//   participants PATH            prints "participant <id> <isLeader>" per latch participant, then "end"
//   quit
//
// The checked resource is a ZooKeeper directory: a writer (or mutex holder) creates RES/w and
// expects to be alone in RES; a reader creates RES/r-<uuid> and expects no RES/w. Any overlap
// the lock should have prevented shows up as a "violation" line.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.List;
import java.util.UUID;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

public class CuratorPeer {
    private static CuratorFramework client;
    private static InterProcessMutex mutex;
    private static InterProcessReadWriteLock rw;
    private static String rwPath;
    private static LeaderLatch latch;
    private static final ArrayDeque<Lease> leases = new ArrayDeque<>();

    private static synchronized void out(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static long czxidOf(InterProcessMutex m) throws Exception {
        // The lock node's path is kept by Curator behind a protected accessor.
        Method get = InterProcessMutex.class.getDeclaredMethod("getLockPath");
        get.setAccessible(true);
        String path = (String) get.invoke(m);
        Stat stat = client.checkExists().forPath(path);
        return stat == null ? -1 : stat.getCzxid();
    }

    private static void enter(String res, boolean reader, String tag) throws Exception {
        client.createContainers(res);
        if (reader) {
            client.create().withMode(CreateMode.EPHEMERAL).forPath(res + "/r-" + tag);
            if (client.checkExists().forPath(res + "/w") != null) {
                out("violation reader-saw-writer " + tag);
            }
        } else {
            try {
                client.create().withMode(CreateMode.EPHEMERAL).forPath(res + "/w", tag.getBytes(StandardCharsets.UTF_8));
            } catch (KeeperException.NodeExistsException e) {
                out("violation writer-saw-writer " + tag);
                return;
            }
            List<String> inside = client.getChildren().forPath(res);
            if (inside.size() != 1) {
                out("violation writer-not-alone " + tag + " " + inside);
            }
        }
    }

    private static void leave(String res, boolean reader, String tag) throws Exception {
        String node = reader ? res + "/r-" + tag : res + "/w";
        try {
            client.delete().forPath(node);
        } catch (KeeperException.NoNodeException e) {
            out("violation resource-node-missing " + tag);
        }
    }

    private static void loop(InterProcessMutex m, boolean reader, int rounds, long holdMs, String res) throws Exception {
        for (int i = 0; i < rounds; i++) {
            m.acquire();
            String tag = "curator-" + UUID.randomUUID();
            enter(res, reader, tag);
            out("enter " + czxidOf(m));
            Thread.sleep(holdMs);
            leave(res, reader, tag);
            m.release();
        }
        out("done " + rounds);
    }

    public static void main(String[] args) throws Exception {
        client = CuratorFrameworkFactory.builder()
                .connectString(args[0])
                .sessionTimeoutMs(10000)
                .connectionTimeoutMs(10000)
                .retryPolicy(new RetryNTimes(20, 200))
                .build();
        client.start();
        client.blockUntilConnected();
        out("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split("\\s+");
            try {
                switch (w[0]) {
                    case "lock":
                        mutex = new InterProcessMutex(client, w[1]);
                        mutex.acquire();
                        out("locked " + czxidOf(mutex));
                        break;
                    case "unlock":
                        mutex.release();
                        out("unlocked");
                        break;
                    case "read-lock":
                    case "write-lock": {
                        if (rw == null || !w[1].equals(rwPath)) {
                            rw = new InterProcessReadWriteLock(client, w[1]);
                            rwPath = w[1];
                        }
                        InterProcessMutex m = w[0].equals("read-lock") ? rw.readLock() : rw.writeLock();
                        m.acquire();
                        out((w[0].equals("read-lock") ? "read-locked " : "write-locked ") + czxidOf(m));
                        break;
                    }
                    case "read-unlock":
                        rw.readLock().release();
                        out("read-unlocked");
                        break;
                    case "write-unlock":
                        rw.writeLock().release();
                        out("write-unlocked");
                        break;
                    case "mutex-loop":
                        loop(new InterProcessMutex(client, w[1]), false, Integer.parseInt(w[2]), Long.parseLong(w[3]), w[4]);
                        break;
                    case "rw-loop": {
                        InterProcessReadWriteLock l = new InterProcessReadWriteLock(client, w[1]);
                        boolean reader = w[2].equals("read");
                        loop(reader ? l.readLock() : l.writeLock(), reader, Integer.parseInt(w[3]), Long.parseLong(w[4]), w[5]);
                        break;
                    }
                    case "sem-acquire": {
                        InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(client, w[1], Integer.parseInt(w[2]));
                        Lease lease = sem.acquire();
                        leases.add(lease);
                        Stat stat = client.checkExists().forPath(w[1] + "/leases/" + lease.getNodeName());
                        out("leased " + (stat == null ? -1 : stat.getCzxid()));
                        break;
                    }
                    case "sem-release":
                        leases.poll().close();
                        out("returned");
                        break;
                    case "latch": {
                        final String id = w[2];
                        latch = new LeaderLatch(client, w[1], id);
                        latch.addListener(new LeaderLatchListener() {
                            public void isLeader() { out("leader " + id); }
                            public void notLeader() { out("follower " + id); }
                        });
                        latch.start();
                        out("latch-started " + id);
                        break;
                    }
                    case "latch-close":
                        latch.close();
                        latch = null;
                        out("latch-closed");
                        break;
                    case "participants": {
                        LeaderLatch probe = latch != null ? latch : new LeaderLatch(client, w[1]);
                        for (Participant p : probe.getParticipants()) {
                            out("participant " + p.getId() + " " + p.isLeader());
                        }
                        out("end");
                        break;
                    }
                    case "quit":
                        client.close();
                        out("bye");
                        return;
                    default:
                        out("error unknown command " + w[0]);
                }
            } catch (Exception e) {
                out("error " + e);
            }
        }
        client.close();
    }
}
