"""Prints how kazoo orders the children of a lock path, with kazoo's own code.

Usage: python3 kazoo_order.py CLASS < names      (CLASS: Lock, ReadLock or WriteLock)

The names are read from stdin, one a line. A kazoo client that is never started stands in
for the server: its listing is the given names, and a node's data is its own name. Prints
"contender NAME" for each contender in the order kazoo's `contenders()` gives, then
"predecessor NAME PRED" (PRED "-" for none: kazoo grants NAME the lock) for every contender,
from kazoo's own `_get_predecessor`.
"""
import sys

from kazoo.client import KazooClient
from kazoo.recipe.lock import Lock, ReadLock, WriteLock


def main():
    cls = {"Lock": Lock, "ReadLock": ReadLock, "WriteLock": WriteLock}[sys.argv[1]]
    names = [line.rstrip("\n") for line in sys.stdin if line.strip()]
    zk = KazooClient(hosts="127.0.0.1:1")
    zk.get_children = lambda path, *args, **kwargs: list(names)
    zk.get = lambda path, *args, **kwargs: (path.rsplit("/", 1)[1].encode(), None)
    zk.ensure_path = lambda path, *args, **kwargs: True
    lock = cls(zk, "/lock")
    order = lock.contenders()
    for name in order:
        print("contender " + name)
    for name in order:
        pred = lock._get_predecessor(name)
        print("predecessor %s %s" % (name, pred if pred is not None else "-"))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
