// Sets the sequence counter of a node's children in a stopped server's data directory, as if
// that many children had been created under it: what takes 2^31 creates through a server.
//
// Usage: java -cp <server classpath> SequenceSeed.java DATA_DIR PATH NEXT
// Loads the database (latest snapshot and transaction logs), replays a create and a delete
// of one child of PATH carrying NEXT as the parent's new child count (what a create's
// transaction carries, `CreateTxn.parentCVersion`), and saves a snapshot at the same zxid,
// which the server loads on its next start. The next sequential child of PATH is then named
// with NEXT. Prints "seeded PATH NEXT".
import java.io.File;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.server.DataNode;
import org.apache.zookeeper.server.DataTree;
import org.apache.zookeeper.server.persistence.FileTxnSnapLog;

public class SequenceSeed {
    public static void main(String[] args) throws Exception {
        File dir = new File(args[0]);
        String path = args[1];
        int next = Integer.parseInt(args[2]);
        FileTxnSnapLog log = new FileTxnSnapLog(dir, dir);
        DataTree tree = new DataTree();
        ConcurrentHashMap<Long, Integer> sessions = new ConcurrentHashMap<>();
        long zxid = log.restore(tree, sessions, (header, txn, digest) -> { });
        DataNode parent = tree.getNode(path);
        if (parent == null) {
            throw new IllegalArgumentException("no node " + path);
        }
        String child = (path.equals("/") ? "" : path) + "/.sequence-seed";
        long now = System.currentTimeMillis();
        // Raises the counter only: a create never lowers it.
        tree.createNode(child, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, 0, next, zxid, now);
        tree.deleteNode(child, zxid);
        log.save(tree, sessions, true);
        log.close();
        System.out.println("seeded " + path + " " + next);
    }
}
