#!/bin/sh
# bench/lifecycle/coverage.sh BUILD_DIR: the lines of the plugin's driver
# (slurm-plugin/lifecycle*.c, driver.c) that the unit tests reach, without a
# cluster: test_lifecycle and test_driver (fake_agents.c) built again with
# those files instrumented (gcov), everything else from BUILD_DIR.
set -eu
build=$(cd "${1:?usage: coverage.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d /tmp/adafs-coverage.XXXXXX)
trap 'rm -rf "$out"' EXIT
cd "$out"
cflags="-std=gnu11 -D_GNU_SOURCE -pthread -g -I$src/slurm-plugin -I$src/common -I$src/tests -I$build"
lc="lifecycle lifecycle_set lifecycle_deploy lifecycle_stage"
for f in $lc driver; do
    gcc $cflags -O0 --coverage -c "$src/slurm-plugin/$f.c" -o $f.o
done
for f in fake_agents test_lifecycle test_driver; do
    gcc $cflags -O2 -c "$src/slurm-plugin/$f.c" -o $f.o
done
libs="$build/slurm-plugin/.libs/libadafs_bb.a -lsodium -lmunge
      $build/walltime-model/.libs/libadafs_walltime.so -lm -lsqlite3 -lxxhash -ljansson -lpthread
      -Wl,-rpath,$build/walltime-model/.libs"
for t in test_lifecycle test_driver; do
    gcc --coverage -o $t $t.o fake_agents.o $(for f in $lc; do echo $f.o; done) driver.o $libs
    ./$t >/dev/null 2>&1 || { echo "coverage.sh: $t failed" >&2; exit 1; }
done
gcov -o . $(for f in $lc; do echo $f.o; done) driver.o 2>/dev/null | awk '
    /^File .*slurm-plugin\/(lifecycle(_set|_deploy|_stage)?|driver)\.c/ { f = $2; next }
    f && /^Lines executed/ { split($2, a, "[:%]"); n = $4; hit = a[2] * n / 100;
        printf "%s %s of %d lines\n", f, a[2] "%", n; H += hit; N += n; f = "" }
    END { printf "all %.1f%% of %d lines\n", 100 * H / N, N }'
