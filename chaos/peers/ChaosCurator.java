// Curator contenders for the chaos run: COUNT threads, each with its own CuratorFramework
// (its own session), taking an InterProcessMutex on LOCK over and over. Inside, each creates
// the ephemeral MARKER in a transaction that checks its lock node (a second holder's create
// fails), prints its fencing token (the czxid of its lock node), holds, deletes the marker in
// a transaction that checks its lock node first, and releases. Lines as in chaos/src/journal.rs. Ends when stdin closes.
//
// Usage: java -cp <curator jars>:<dir> ChaosCurator CONNECT LOCK MARKER COUNT HOLD_MS SESSION_MS
//        java -cp <curator jars>:<dir> ChaosCurator enter-once CONNECT LOCKDIR MARKER CASE
// The second form checks one entry (see enterOnce).
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryForever;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;

public class ChaosCurator {
    private static synchronized void out(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static long nowNs() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    private static String lockPathOf(InterProcessMutex m) throws Exception {
        // Curator keeps the lock node's path behind a protected accessor.
        Method get = InterProcessMutex.class.getDeclaredMethod("getLockPath");
        get.setAccessible(true);
        return (String) get.invoke(m);
    }

    // Creates the marker in one transaction with a check of our lock node, sent through the
    // handle of the session that owns the lock node. Returns the czxid of our marker (a Long),
    // who is inside (a String) when someone else's marker is there while our lock node is, or
    // null when the lock is no longer ours. Through Curator, a marker could be made by another
    // session than the lock node's: Curator retries an operation on a new session after an
    // expiry, and it declares a session expired by its own clock (a connection lost for a
    // session timeout) and starts a new one while the server still keeps the old one, and the
    // lock node with it. Such a marker outlives the lock node, and the next holder finds it.
    private static Object enter(CuratorFramework client, String node, long owner, String marker, byte[] data)
            throws Exception {
        while (true) {
            ZooKeeper zk = client.getZookeeperClient().getZooKeeper();
            if (zk.getSessionId() != owner) {
                return null;
            }
            try {
                zk.multi(Arrays.asList(
                        Op.check(node, -1),
                        Op.create(marker, data, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL)));
            } catch (KeeperException e) {
                // Below: whose marker is there, and whether the lock is still ours.
            }
            Stat there = new Stat();
            byte[] inside;
            try {
                inside = client.getData().storingStatIn(there).forPath(marker);
            } catch (KeeperException.NoNodeException e) {
                inside = null;
            }
            if (inside != null && there.getEphemeralOwner() == owner) {
                return there.getCzxid();
            }
            // Looked at after the marker: a lock node still there was ours when it was read.
            if (client.checkExists().forPath(node) == null) {
                return null;
            }
            if (inside != null) {
                return new String(inside, StandardCharsets.UTF_8);
            }
            Thread.sleep(20);
        }
    }

    // Deletes the marker while our lock node exists, retried until it is gone: the lock is
    // released only after, or the next holder would find it.
    private static boolean leave(CuratorFramework client, String node, String marker) throws InterruptedException {
        while (true) {
            try {
                client.transaction().forOperations(
                        client.transactionOp().check().forPath(node),
                        client.transactionOp().delete().forPath(marker));
                return true;
            } catch (Exception e) {
                // Below: whether the marker is still ours to delete.
            }
            try {
                Stat there = client.checkExists().forPath(marker);
                long session = client.getZookeeperClient().getZooKeeper().getSessionId();
                if (there == null || there.getEphemeralOwner() != session) {
                    return there == null;
                }
            } catch (Exception e) {
                // Not known yet: try again.
            }
            Thread.sleep(50);
        }
    }

    private static void contend(String connect, String lock, String marker, String who, long holdMs, int sessionMs) {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(sessionMs)
                .retryPolicy(new RetryForever(100))
                .build();
        client.start();
        InterProcessMutex mutex = new InterProcessMutex(client, lock);
        byte[] data = who.getBytes(StandardCharsets.UTF_8);
        while (true) {
            try {
                if (!mutex.acquire(30, TimeUnit.SECONDS)) {
                    continue;
                }
                try {
                    String node = lockPathOf(mutex);
                    Stat lockStat = client.checkExists().forPath(node);
                    if (lockStat == null) {
                        out("error " + who + " granted, but the lock node is gone");
                        continue;
                    }
                    long token = lockStat.getCzxid();
                    Object entered = enter(client, node, lockStat.getEphemeralOwner(), marker, data);
                    if (entered == null) {
                        out("error " + who + " lost the lock before entering");
                        continue;
                    }
                    if (entered instanceof String) {
                        out("violation " + who + " found " + entered
                                + " inside while holding token 0x" + Long.toHexString(token));
                        continue;
                    }
                    long markerCzxid = (Long) entered;
                    out("grant " + who + " " + token + " " + markerCzxid + " " + nowNs());
                    Thread.sleep(holdMs);
                    if (leave(client, node, marker)) {
                        out("exit " + who + " " + token + " " + nowNs());
                    }
                } finally {
                    mutex.release();
                }
            } catch (Exception e) {
                out("error " + who + " " + e.toString().replace('\n', ' '));
            }
        }
    }

    // One entry, for chaos/tests/peer_entry.rs: takes a lock node under LOCKDIR (an ephemeral
    // sequential node of its session), then, for CASE `gone`, deletes it, or for `expired`,
    // has Curator declare the session expired by its own clock (the server keeps it, and the
    // lock node) and waits for the new session; then enters as the node's holder and prints
    // `inside CZXID`, `occupied WHO` or `lost`.
    private static void enterOnce(String connect, String lockDir, String marker, String kase) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(connect, new RetryForever(100));
        client.start();
        client.blockUntilConnected();
        String node = client.create().creatingParentsIfNeeded()
                .withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(lockDir + "/lock-");
        Stat lock = client.checkExists().forPath(node);
        if (kase.equals("gone")) {
            client.delete().forPath(node);
        } else if (kase.equals("expired")) {
            long old = lock.getEphemeralOwner();
            client.getZookeeperClient().getZooKeeper().getTestable().injectSessionExpiration();
            while (client.getZookeeperClient().getZooKeeper().getSessionId() == old
                    || !client.getZookeeperClient().isConnected()) {
                Thread.sleep(20);
            }
        }
        Object entered = enter(client, node, lock.getEphemeralOwner(), marker,
                "curator-once".getBytes(StandardCharsets.UTF_8));
        out(entered == null ? "lost" : entered instanceof String ? "occupied " + entered : "inside " + entered);
        client.close();
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("enter-once")) {
            enterOnce(args[1], args[2], args[3], args[4]);
            return;
        }
        String connect = args[0], lock = args[1], marker = args[2];
        int count = Integer.parseInt(args[3]);
        long holdMs = Long.parseLong(args[4]);
        int sessionMs = Integer.parseInt(args[5]);
        for (int i = 0; i < count; i++) {
            String who = "curator-" + i;
            Thread t = new Thread(() -> contend(connect, lock, marker, who, holdMs, sessionMs));
            t.setDaemon(true);
            t.start();
        }
        while (System.in.read() != -1) {
        }
        System.exit(0);
    }
}
