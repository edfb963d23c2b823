// A Curator peer for the LeaderSelector and shared-count semaphore interoperability tests,
// driven over stdin/stdout like CuratorPeer.
//
// Usage: java -cp <curator jars>:<dir> CuratorContentionPeer <connect string>
// Prints "ready" once connected, then reads one command per line. Commands:
//
//   select PATH ID TERMS HOLD_MS RES   a LeaderSelector with auto-requeue whose takeLeadership
//                                      enters the checked resource RES, prints "lead <n>",
//                                      holds HOLD_MS, leaves; after TERMS terms it is closed and
//                                      prints "done TERMS". Runs in the background: other
//                                      commands are read meanwhile.
//   count-start PATH SEED              start a SharedCount; prints "count <n>"
//   count-set N                        setCount(N); prints "count-set N"
//   sem-acquire PATH                   take a lease of an InterProcessSemaphoreV2 whose maximum
//                                      is the SharedCount's; prints "leased"
//   sem-release                        return the oldest lease taken; prints "returned"
//   quit
//
// The checked resource is a ZooKeeper directory: a leader creates RES/w (ephemeral) and expects
// to be alone in RES; a second leader's create fails, printed as "violation ...".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;

public class CuratorContentionPeer {
    private static CuratorFramework client;
    private static SharedCount count;
    private static final ArrayDeque<Lease> leases = new ArrayDeque<>();

    private static synchronized void out(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static boolean enter(String res, String tag) throws Exception {
        client.createContainers(res);
        try {
            client.create().withMode(CreateMode.EPHEMERAL).forPath(res + "/w", tag.getBytes(StandardCharsets.UTF_8));
        } catch (KeeperException.NodeExistsException e) {
            out("violation leader-saw-leader " + tag);
            return false;
        }
        List<String> inside = client.getChildren().forPath(res);
        if (inside.size() != 1) {
            out("violation leader-not-alone " + tag + " " + inside);
        }
        return true;
    }

    private static void leave(String res, String tag) throws Exception {
        try {
            client.delete().forPath(res + "/w");
        } catch (KeeperException.NoNodeException e) {
            out("violation resource-node-missing " + tag);
        }
    }

    private static void select(String path, String id, final int terms, final long holdMs, final String res) {
        final AtomicInteger led = new AtomicInteger();
        final Object finished = new Object();
        final LeaderSelector[] selector = new LeaderSelector[1];
        selector[0] = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
            public void takeLeadership(CuratorFramework c) throws Exception {
                if (led.get() >= terms) {
                    return;
                }
                String tag = "curator-" + UUID.randomUUID();
                if (!enter(res, tag)) {
                    return;
                }
                try {
                    out("lead " + led.incrementAndGet());
                    Thread.sleep(holdMs);
                } finally {
                    leave(res, tag);
                }
                if (led.get() >= terms) {
                    synchronized (finished) {
                        finished.notifyAll();
                    }
                }
            }
        });
        selector[0].setId(id);
        selector[0].autoRequeue();
        selector[0].start();
        Thread waiter = new Thread(() -> {
            try {
                synchronized (finished) {
                    while (led.get() < terms) {
                        finished.wait();
                    }
                }
                selector[0].close();
                out("done " + terms);
            } catch (Exception e) {
                out("error " + e);
            }
        });
        waiter.setDaemon(true);
        waiter.start();
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
                    case "select":
                        select(w[1], w[2], Integer.parseInt(w[3]), Long.parseLong(w[4]), w[5]);
                        break;
                    case "count-start":
                        count = new SharedCount(client, w[1], Integer.parseInt(w[2]));
                        count.start();
                        out("count " + count.getCount());
                        break;
                    case "count-set":
                        count.setCount(Integer.parseInt(w[1]));
                        out("count-set " + w[1]);
                        break;
                    case "sem-acquire": {
                        InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(client, w[1], count);
                        leases.add(sem.acquire());
                        out("leased");
                        break;
                    }
                    case "sem-release":
                        leases.poll().close();
                        out("returned");
                        break;
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
