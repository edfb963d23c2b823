// A Curator peer for the counter, barrier and membership interoperability tests, driven over
// stdin/stdout like CuratorPeer.
//
// Usage: java -cp <curator jars>:<dir> CuratorRecipesPeer <connect string>
// Prints "ready" once connected, then reads one command per line. Commands:
//
//   shared-incr PATH N           N increments of a SharedCount (seed 0), each a trySetCount loop;
//                                prints "shared-done N"
//   shared-get PATH              prints "shared-value <count>"
//   along-incr PATH LOCK N       N increments of a DistributedAtomicLong promoted to the lock at
//                                LOCK, each repeated until it succeeds; prints "along-done N"
//   along-get PATH               prints "along-value <value>"
//   dbarrier-enter PATH QTY      enter a DistributedDoubleBarrier of QTY members; prints "entered"
//   dbarrier-leave               leave it; prints "left"
//   barrier-wait PATH            wait on a DistributedBarrier; prints "barrier-passed"
//   member PATH ID DATA          start a GroupMember; prints "member-started"
//   members                      prints "member <id> <data>" per member, then "end"
//   member-close                 close it; prints "member-closed"
//   quit
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.atomic.PromotedToLock;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.retry.RetryNTimes;

public class CuratorRecipesPeer {
    private static CuratorFramework client;
    private static DistributedDoubleBarrier doubleBarrier;
    private static GroupMember member;

    private static synchronized void out(String line) {
        System.out.println(line);
        System.out.flush();
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
                    case "shared-incr": {
                        SharedCount count = new SharedCount(client, w[1], 0);
                        count.start();
                        int n = Integer.parseInt(w[2]);
                        for (int i = 0; i < n; i++) {
                            while (true) {
                                VersionedValue<Integer> seen = count.getVersionedValue();
                                if (count.trySetCount(seen, seen.getValue() + 1)) {
                                    break;
                                }
                            }
                        }
                        count.close();
                        out("shared-done " + n);
                        break;
                    }
                    case "shared-get": {
                        SharedCount count = new SharedCount(client, w[1], 0);
                        count.start();
                        out("shared-value " + count.getCount());
                        count.close();
                        break;
                    }
                    case "along-incr": {
                        PromotedToLock promoted = PromotedToLock.builder()
                                .lockPath(w[2])
                                .retryPolicy(new RetryNTimes(20, 10))
                                .timeout(10, TimeUnit.SECONDS)
                                .build();
                        DistributedAtomicLong counter =
                                new DistributedAtomicLong(client, w[1], new RetryNTimes(5, 10), promoted);
                        int n = Integer.parseInt(w[3]);
                        for (int i = 0; i < n; i++) {
                            while (true) {
                                AtomicValue<Long> r = counter.increment();
                                if (r.succeeded()) {
                                    break;
                                }
                            }
                        }
                        out("along-done " + n);
                        break;
                    }
                    case "along-get": {
                        DistributedAtomicLong counter =
                                new DistributedAtomicLong(client, w[1], new RetryNTimes(5, 10));
                        out("along-value " + counter.get().postValue());
                        break;
                    }
                    case "dbarrier-enter":
                        doubleBarrier = new DistributedDoubleBarrier(client, w[1], Integer.parseInt(w[2]));
                        doubleBarrier.enter();
                        out("entered");
                        break;
                    case "dbarrier-leave":
                        doubleBarrier.leave();
                        out("left");
                        break;
                    case "barrier-wait":
                        new DistributedBarrier(client, w[1]).waitOnBarrier();
                        out("barrier-passed");
                        break;
                    case "member":
                        member = new GroupMember(client, w[1], w[2], w[3].getBytes(StandardCharsets.UTF_8));
                        member.start();
                        out("member-started");
                        break;
                    case "members": {
                        Map<String, byte[]> members = new TreeMap<>(member.getCurrentMembers());
                        for (Map.Entry<String, byte[]> e : members.entrySet()) {
                            out("member " + e.getKey() + " " + new String(e.getValue(), StandardCharsets.UTF_8));
                        }
                        out("end");
                        break;
                    }
                    case "member-close":
                        member.close();
                        member = null;
                        out("member-closed");
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
