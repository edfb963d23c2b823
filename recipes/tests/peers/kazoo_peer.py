"""A kazoo peer for the interoperability tests, driven over stdin/stdout.

Usage: python3 kazoo_peer.py <connect string>
Prints "ready" once connected, then one command per line:

  lock PATH ID                  acquire a kazoo Lock; prints "locked <czxid>"
  unlock                        release it; prints "unlocked"
  mutex-loop PATH N HOLD_MS RES N rounds of: acquire, enter the checked resource RES, hold,
                                leave, release; prints "enter <czxid>" per round and "done N";
                                another holder inside RES prints "violation ..."
  contenders PATH               prints "contender <id>" per contender in lock order, then "end"
  quit

The checked resource is a ZooKeeper node RES/w that a holder creates on entry and deletes
on exit: finding it already there means two holders overlapped.
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


def loop(zk, path, rounds, hold_ms, res):
    lock = zk.Lock(path, "kazoo")
    zk.ensure_path(res)
    for _ in range(rounds):
        lock.acquire()
        tag = "kazoo-" + uuid.uuid4().hex
        try:
            zk.create(res + "/w", tag.encode(), ephemeral=True)
        except NodeExistsError:
            out("violation writer-saw-writer " + tag)
        out("enter %d" % czxid_of(zk, lock))
        time.sleep(hold_ms / 1000.0)
        try:
            zk.delete(res + "/w")
        except NoNodeError:
            out("violation resource-node-missing " + tag)
        lock.release()
    out("done %d" % rounds)


def main():
    zk = KazooClient(hosts=sys.argv[1], timeout=10.0)
    zk.start(timeout=15)
    out("ready")
    lock = None
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
            elif cmd == "mutex-loop":
                loop(zk, words[1], int(words[2]), int(words[3]), words[4])
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
