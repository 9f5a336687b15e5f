#!/bin/sh
# The real-program suite of test_preload_programs.sh as a job with
# access=both runs it: under the interposer, with an adafs-fuse mount at the
# mount point too (static binaries and concurrent sqlite3 processes use
# the mount; exec and mmap go through it).
ADAFS_TEST_ACCESS=both
export ADAFS_TEST_ACCESS
. "${srcdir:-.}/tests/test_preload_programs.sh"
