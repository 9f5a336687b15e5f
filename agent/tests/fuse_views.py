"""fuse_views.py DIR COMMAND...: the mount's attributes against changes made
elsewhere, within the kernel's clock tick (doc/fuse.md, Consistency).

This process works through the kernel mount at DIR; COMMAND runs a python3
under the interposer (access=both), which changes the same files through
adafs on this process's word, over a pipe: a round trip of well under a
tick (4 ms at HZ=250), so a lookup's attributes the kernel keeps for its
tick are still there when the checks below ask. Each check is one TAP
line: what the doc promises, never the documented exception (an fstat
within the tick of another lookup of the file after its open)."""
import os
import subprocess
import sys
import time

HELPER = r"""
import os, sys
for line in sys.stdin:
    op, path, arg = line.split()
    if op == "grow":   # a write past the end: the kernel is not told
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        os.pwrite(fd, b"x", int(arg) - 1)
        os.close(fd)
    elif op == "remove":
        os.unlink(path)
    print("done", flush=True)
"""

n = 0
failed = False


def check(ok, what):
    global n, failed
    n += 1
    print(("ok" if ok else "not ok") + " %d - %s" % (n, what), flush=True)
    failed |= not ok


def main():
    d = sys.argv[1]
    helper = subprocess.Popen(sys.argv[2:] + ["-u", "-c", HELPER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)

    def elsewhere(op, path, arg=0):
        helper.stdin.write("%s %s %d\n" % (op, path, arg))
        helper.stdin.flush()
        if helper.stdout.readline().strip() != "done":
            raise SystemExit("the interposer's helper did not answer")

    f = os.path.join(d, "f")
    with open(f, "wb") as out:
        out.write(b"a")

    size = [1]

    def grown():
        size[0] += 100
        return size[0]

    # Each check below runs its calls within 3 ms (tried again when the
    # machine was slower): under a tick at HZ=250, so whatever a lookup
    # left in the kernel is still there when the last call asks.
    def within_tick(calls):
        for _ in range(50):
            t0 = time.monotonic()
            got = calls()
            if time.monotonic() - t0 < 0.003:
                return got
        print("# never within 3 ms: the check proves less than it says")
        return got

    # every stat of a path is a lookup: it sees the servers' file
    def stat_after_write():
        os.stat(f)
        want = grown()
        elsewhere("grow", f, want)
        return os.stat(f).st_size == want
    check(within_tick(stat_after_write), "a stat right after a write elsewhere sees the new size")

    # an open takes back what its lookup left: fstat asks the servers
    def fstat_after_open():
        fd = os.open(f, os.O_RDONLY)
        want = grown()
        elsewhere("grow", f, want)
        seen = os.fstat(fd).st_size
        want2 = grown()
        elsewhere("grow", f, want2)
        end = os.lseek(fd, 0, os.SEEK_END)
        os.close(fd)
        return seen == want, end == want2
    seen, end = within_tick(fstat_after_open)
    check(seen, "an fstat right after an open sees a write made after the open")
    check(end, "and lseek to the end one made after that fstat")
    fd = os.open(f, os.O_RDONLY)

    # a lookup's attributes last one tick or two, not longer
    os.stat(f)
    want = grown()
    elsewhere("grow", f, want)
    time.sleep(0.02)
    check(os.fstat(fd).st_size == want, "an fstat 20 ms after a lookup asks the servers")
    os.close(fd)

    # absence is never kept
    g = os.path.join(d, "g")
    check(not os.path.exists(g), "a missing name is missing")
    elsewhere("grow", g, 10)
    check(os.path.exists(g) and os.stat(g).st_size == 10,
          "made elsewhere, it is found at once")
    elsewhere("remove", g)
    check(not os.path.exists(g), "removed elsewhere, it is gone at once")

    helper.stdin.close()
    helper.wait()
    print("1..%d" % n)
    sys.exit(1 if failed else 0)


main()
