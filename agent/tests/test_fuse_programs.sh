#!/bin/sh
# The real-program suite (cp, tar, dd, find, rsync, python3, sqlite3, fio,
# shells; gcc, git, numpy.memmap, busybox-static, sqlite3 WAL) of
# test_preload_programs.sh, through an adafs-fuse mount instead of the
# interposer: every result byte for byte as on a local directory.
ADAFS_TEST_ACCESS=fuse
export ADAFS_TEST_ACCESS
. "${srcdir:-.}/tests/test_preload_programs.sh"
