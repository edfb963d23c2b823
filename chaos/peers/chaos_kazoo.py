"""kazoo contenders for the chaos run: COUNT threads, each with its own KazooClient (its own
session), taking a kazoo Lock on LOCK over and over. Inside, each creates the ephemeral
MARKER in a transaction that checks its lock node (a second holder's create fails), prints its fencing token (the czxid of its lock
node), holds, deletes the marker in a transaction that checks its lock node first, and
releases. Lines as in chaos/src/journal.rs. Ends when stdin closes.

Usage: python3 chaos_kazoo.py CONNECT LOCK MARKER COUNT HOLD_MS SESSION_MS
       python3 chaos_kazoo.py enter-once CONNECT LOCKDIR MARKER CASE
The second form checks one entry (see enter_once).
"""
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import (
    KazooException,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)
from kazoo.retry import KazooRetry

out_lock = threading.Lock()


def out(line):
    with out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def ours(zk, stat):
    """Whether our session owns the node of `stat`; None while not connected."""
    cid = zk.client_id
    return None if cid is None else stat.ephemeralOwner == cid[0]


def enter(zk, node, owner, marker, who):
    """Creates the marker in one transaction with a check of our lock node, while our session
    is the one that owns it (`owner`): (its czxid, None), (None, who is inside) when someone
    else's marker is there while our lock node is, or (None, None) when the lock is no longer
    ours. A transaction whose reply was lost is looked for again: the marker is ours if the
    lock node's session owns it. Tried again after kazoo started a new session, an unguarded
    create would make the marker after the lock went with the old one."""
    while True:
        cid = zk.client_id
        if cid is not None and cid[0] != owner:
            return None, None
        try:
            t = zk.transaction()
            t.check(node, -1)
            t.create(marker, who.encode(), ephemeral=True)
            t.commit()
        except SessionExpiredError:
            raise
        except KazooException:
            pass  # a lost connection: the transaction may have been applied
        try:
            inside, there = zk.get(marker)
        except NoNodeError:
            inside, there = None, None
        except SessionExpiredError:
            raise
        except KazooException:
            time.sleep(0.05)
            continue
        if there is not None and there.ephemeralOwner == owner:
            return there.czxid, None
        # Looked at after the marker: a lock node still there was ours when it was read.
        try:
            if zk.exists(node) is None:
                return None, None
        except SessionExpiredError:
            raise
        except KazooException:
            time.sleep(0.05)
            continue
        if inside is not None:
            return None, inside.decode(errors="replace")
        time.sleep(0.02)


def leave(zk, node, marker, who):
    """Deletes the marker while our lock node exists, retried until it is gone: the lock is
    released only after, or the next holder would find it."""
    while True:
        try:
            t = zk.transaction()
            t.check(node, -1)
            t.delete(marker)
            failed = [r for r in t.commit() if isinstance(r, Exception)]
            if not failed:
                return True
        except SessionExpiredError:
            return False  # the marker went with the session
        except KazooException:
            pass  # a lost connection: look again
        try:
            there = zk.exists(marker)
            if there is None:
                return True  # deleted by an earlier try whose reply was lost
            if ours(zk, there) is False:
                return False
        except SessionExpiredError:
            return False
        except KazooException:
            pass
        time.sleep(0.05)


def contend(connect, lock_path, marker, who, hold_ms, session_ms):
    retry = {"max_tries": -1, "delay": 0.1, "max_delay": 1.0}
    zk = KazooClient(
        hosts=connect,
        timeout=session_ms / 1000.0,
        connection_retry=KazooRetry(**retry),
        command_retry=KazooRetry(**retry),
    )
    zk.start(timeout=60)
    lock = zk.Lock(lock_path, who)
    while True:
        try:
            if not lock.acquire(timeout=30):
                continue
            try:
                node = lock_path + "/" + lock.node
                stat = zk.exists(node)
                if stat is None:
                    out("error %s granted, but the lock node is gone" % who)
                    continue
                token = stat.czxid
                marker_czxid, inside = enter(zk, node, stat.ephemeralOwner, marker, who)
                if marker_czxid is None and inside is None:
                    out("error %s lost the lock before entering" % who)
                    continue
                if inside is not None:
                    out("violation %s found %s inside while holding token %#x"
                        % (who, inside, token))
                    continue
                out("grant %s %d %d %d" % (who, token, marker_czxid, time.time_ns()))
                time.sleep(hold_ms / 1000.0)
                if leave(zk, node, marker, who):
                    out("exit %s %d %d" % (who, token, time.time_ns()))
            finally:
                lock.release()
        except Exception as e:  # report, keep contending
            out("error %s %r" % (who, e))


def enter_once(connect, lock_dir, marker, case):
    """One entry, for chaos/tests/peer_entry.rs: takes a lock node under LOCKDIR (an ephemeral
    sequential node of its session), deletes it for CASE `gone`, then enters as its holder and
    prints `inside CZXID`, `occupied WHO` or `lost`."""
    zk = KazooClient(hosts=connect)
    zk.start(timeout=60)
    node = zk.create(lock_dir + "/lock-", ephemeral=True, sequence=True, makepath=True)
    owner = zk.exists(node).ephemeralOwner
    if case == "gone":
        zk.delete(node)
    czxid, inside = enter(zk, node, owner, marker, "kazoo-once")
    if czxid is not None:
        out("inside %d" % czxid)
    elif inside is not None:
        out("occupied %s" % inside)
    else:
        out("lost")
    zk.stop()


def main():
    if sys.argv[1] == "enter-once":
        enter_once(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
        return
    connect, lock_path, marker = sys.argv[1], sys.argv[2], sys.argv[3]
    count, hold_ms, session_ms = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    for i in range(count):
        t = threading.Thread(
            target=contend,
            args=(connect, lock_path, marker, "kazoo-%d" % i, hold_ms, session_ms),
            daemon=True,
        )
        t.start()
    sys.stdin.read()


if __name__ == "__main__":
    main()
