"""preload_walk.py ROOT: file I/O that Python programs do, with a report.

test_preload_programs.sh runs it once on a local directory and once under
the interposer on adafs and compares the two reports byte for byte. The
report leaves out what differs between file systems by nature (inode
numbers, times, directory sizes, listing order).
"""
import hashlib
import os
import shutil
import sys


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def tree_report(top):
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        rel = os.path.relpath(dirpath, top)
        print("walk", rel, sorted(dirnames), len(filenames))
        for name in sorted(filenames):
            p = os.path.join(dirpath, name)
            st = os.stat(p)
            print("  file", name, st.st_size, oct(st.st_mode & 0o777), digest(p))


def main(root):
    os.makedirs(os.path.join(root, "a", "b", "c"), exist_ok=True)
    text = os.path.join(root, "text.txt")
    with open(text, "w") as f:
        for i in range(3000):
            f.write("line %d\n" % i)
    with open(text, "a") as f:
        f.write("appended\n")
    with open(text) as f:
        lines = f.readlines()
    print("text", len(lines), lines[1234].strip(), lines[-1].strip())

    binary = os.path.join(root, "a", "data.bin")
    data = bytes((i * 7) % 251 for i in range(300000))
    with open(binary, "wb") as f:
        f.write(data)
        f.seek(100000)
        f.write(b"X" * 10)
    with open(binary, "r+b") as f:
        f.seek(0, os.SEEK_END)
        print("binary size", f.tell())
        f.seek(99995)
        print("binary middle", f.read(20))
        f.seek(500000)
        f.write(b"end")  # a hole from 300000 to 500000
    with open(binary, "rb") as f:
        f.seek(400000)
        print("hole reads zeros", f.read(8) == bytes(8))

    raw = os.path.join(root, "a", "raw")
    fd = os.open(raw, os.O_CREAT | os.O_WRONLY, 0o640)
    os.pwrite(fd, b"abc", 70000)
    os.fsync(fd)
    os.close(fd)
    st = os.stat(raw)
    print("raw", st.st_size, oct(st.st_mode & 0o777))
    os.truncate(raw, 10)
    print("raw truncated", os.path.getsize(raw))
    moved = os.path.join(root, "a", "b", "moved")
    os.rename(raw, moved)
    print("renamed", os.path.exists(raw), os.path.exists(moved))
    try:
        os.rmdir(os.path.join(root, "a"))
    except OSError as e:
        print("rmdir non-empty:", e.strerror)
    try:
        open(os.path.join(root, "missing", "x"))
    except OSError as e:
        print("open missing:", e.strerror)

    for i in range(60):
        with open(os.path.join(root, "a", "b", "c", "f%02d" % i), "w") as f:
            f.write("x" * (i * 1000))

    with os.scandir(os.path.join(root, "a")) as it:
        print("scandir", sorted((e.name, e.is_dir(), e.is_file()) for e in it))

    shutil.copytree(os.path.join(root, "a"), os.path.join(root, "copy"))
    print("--- tree")
    tree_report(root)
    print("--- fwalk")
    for dirpath, dirnames, filenames, dirfd in os.fwalk(os.path.join(root, "copy")):
        print("fwalk", os.path.relpath(dirpath, root), sorted(dirnames), len(filenames),
              sum(os.stat(n, dir_fd=dirfd).st_size for n in filenames))
    shutil.rmtree(os.path.join(root, "copy"))
    print("after rmtree", sorted(os.listdir(root)))
    print("cwd", os.path.relpath(os.getcwd(), root) if os.getcwd().startswith(root) else "outside")
    os.chdir(os.path.join(root, "a"))
    print("chdir", os.path.relpath(os.getcwd(), root), sorted(os.listdir(".")))
    with open("b/moved", "rb") as f:
        print("relative read", f.read())


main(sys.argv[1])
