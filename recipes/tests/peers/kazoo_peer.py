"""A kazoo peer for the interoperability tests, driven over stdin/stdout.

Usage: python3 kazoo_peer.py <connect string>
Prints "ready" once connected, then one command per line:

  lock PATH ID                  acquire a kazoo Lock; prints "locked <czxid>"
  unlock                        release it; prints "unlocked"
  read-lock PATH / write-lock PATH
                                acquire a kazoo ReadLock / WriteLock; prints
                                "read-locked <czxid>" / "write-locked <czxid>"
  read-unlock / write-unlock    release it; prints "read-unlocked" / "write-unlocked"
  mutex-loop PATH N HOLD_MS RES N rounds of: acquire, enter the checked resource RES, hold,
                                leave, release; prints "enter <czxid>" per round and "done N";
                                another holder inside RES prints "violation ..."
  rw-loop PATH MODE N HOLD_MS RES
                                the same with a WriteLock (MODE=write) or ReadLock (MODE=read)
  contenders PATH               prints "contender <id>" per contender in lock order, then "end"
  quit

The checked resource is a ZooKeeper directory: a writer (or mutex holder) creates RES/w on
entry and deletes it on exit, and must be alone in RES; a reader creates RES/r-<tag> and must
not find RES/w. An overlap the lock should have prevented prints "violation ...".
"""
import sys
import time
import uuid

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def czxid_of(zk, lock):
    # kazoo keeps the name of its own lock node in `lock.node`.
    stat = zk.exists(lock.path + "/" + lock.node)
    return stat.czxid if stat else -1


def enter(zk, res, reader, tag):
    if reader:
        zk.create(res + "/r-" + tag, b"", ephemeral=True)
        if zk.exists(res + "/w") is not None:
            out("violation reader-saw-writer " + tag)
        return
    try:
        zk.create(res + "/w", tag.encode(), ephemeral=True)
    except NodeExistsError:
        out("violation writer-saw-writer " + tag)
        return
    inside = zk.get_children(res)
    if len(inside) != 1:
        out("violation writer-not-alone %s %s" % (tag, inside))


def leave(zk, res, reader, tag):
    try:
        zk.delete(res + ("/r-" + tag if reader else "/w"))
    except NoNodeError:
        out("violation resource-node-missing " + tag)


def loop(zk, lock, reader, rounds, hold_ms, res):
    zk.ensure_path(res)
    for _ in range(rounds):
        lock.acquire()
        tag = "kazoo-" + uuid.uuid4().hex
        enter(zk, res, reader, tag)
        out("enter %d" % czxid_of(zk, lock))
        time.sleep(hold_ms / 1000.0)
        leave(zk, res, reader, tag)
        lock.release()
    out("done %d" % rounds)


def main():
    zk = KazooClient(hosts=sys.argv[1], timeout=10.0)
    zk.start(timeout=15)
    out("ready")
    lock = read_lock = write_lock = None
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            cmd = words[0]
            if cmd == "lock":
                lock = zk.Lock(words[1], words[2] if len(words) > 2 else "kazoo")
                lock.acquire()
                out("locked %d" % czxid_of(zk, lock))
            elif cmd == "unlock":
                lock.release()
                out("unlocked")
            elif cmd == "read-lock":
                read_lock = zk.ReadLock(words[1], "kazoo")
                read_lock.acquire()
                out("read-locked %d" % czxid_of(zk, read_lock))
            elif cmd == "read-unlock":
                read_lock.release()
                out("read-unlocked")
            elif cmd == "write-lock":
                write_lock = zk.WriteLock(words[1], "kazoo")
                write_lock.acquire()
                out("write-locked %d" % czxid_of(zk, write_lock))
            elif cmd == "write-unlock":
                write_lock.release()
                out("write-unlocked")
            elif cmd == "mutex-loop":
                lock = zk.Lock(words[1], "kazoo")
                loop(zk, lock, False, int(words[2]), int(words[3]), words[4])
            elif cmd == "rw-loop":
                reader = words[2] == "read"
                lock = (zk.ReadLock if reader else zk.WriteLock)(words[1], "kazoo")
                loop(zk, lock, reader, int(words[3]), int(words[4]), words[5])
            elif cmd == "contenders":
                for c in zk.Lock(words[1]).contenders():
                    out("contender " + c)
                out("end")
            elif cmd == "quit":
                zk.stop()
                out("bye")
                return
            else:
                out("error unknown command " + cmd)
        except Exception as e:  # report, keep serving
            out("error %r" % (e,))
    zk.stop()


if __name__ == "__main__":
    main()
