#!/bin/bash
# Every shared object exports only its API: `nm -D` of each built .so must
# equal the list beside its sources (NAME.sym, also the linker's export
# list), so exporting a name is a deliberate change. The plugin's list must
# be exactly what Slurm looks up; common/'s functions are linked as adafs_*.
. "${abs_top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
src=$abs_top_srcdir
build=$abs_top_builddir

exports() { nm -D --defined-only "$1" | awk '{print $NF}' | sed 's/@.*//' | sort -u; }

found=0
# Libraries of tests/ directories (LD_PRELOAD shims for tests) are not
# installed; adafs-* is make distcheck's tree.
while IFS= read -r so; do
    found=$((found + 1))
    rel=${so#"$build"/}
    dir=${rel%/.libs/*}
    name=$(basename "$so" .so)
    list=$src/$dir/$name.sym
    if [ ! -f "$list" ]; then
        ok 1 "$rel: its exports are listed in $dir/$name.sym"
        continue
    fi
    extra=$(comm -23 <(exports "$so") <(sort -u "$list"))
    missing=$(comm -13 <(exports "$so") <(sort -u "$list"))
    [ -n "$extra" ] && diag "$rel exports what $dir/$name.sym does not list:" $extra
    [ -n "$missing" ] && diag "$rel does not export what $dir/$name.sym lists:" $missing
    ok "$([ -z "$extra$missing" ]; echo $?)" "$rel exports exactly $dir/$name.sym ($(wc -l <"$list") names)"
done < <(find "$build" -path "$build/adafs-*" -prune -o \
              -path "$build/*/.libs/*.so" ! -path "$build/*/tests/*" -print | sort)
check "found the shared objects ($found)" -- test "$found" -ge 3

# slurmctld looks up plugin_name, plugin_type, plugin_version, init and fini
# (src/common/plugin.c) and the burst buffer's syms[] (src/slurmctld/burst_buffer.c).
bb=${SLURM_SRC:-}/src/slurmctld/burst_buffer.c
if [ -n "${SLURM_SRC:-}" ] && [ -f "$bb" ]; then
    wanted=$( { printf '%s\n' plugin_name plugin_type plugin_version init fini
                sed -n '/syms\[\] = {/,/};/p' "$bb" | grep -o '"[a-z_0-9]*"' | tr -d '"'; } | sort)
    got=$(sort "$src/slurm-plugin/burst_buffer_adafs.sym")
    [ "$wanted" = "$got" ] || diag "differences (< Slurm, > ours):" "$(diff <(echo "$wanted") <(echo "$got") | grep '^[<>]' | tr '\n' ' ')"
    check "burst_buffer_adafs.sym is what Slurm $(basename "$SLURM_SRC") looks up" -- test "$wanted" = "$got"
    for p in plugin_name plugin_type plugin_version init fini; do
        grep -q "^$p\$" <<<"$wanted" || diag "plugin.c no longer names $p"
    done
else
    skip "no Slurm source (configure --with-slurm-source): plugin list not compared with Slurm's"
fi

# The shared code is linked as adafs_* (common/linknames.h): all of
# common/'s libraries (libadafs_session keeps munge and libsodium out of the
# others, libadafs_qos is the interposer's QoS data plane, libadafs_qosctl
# the QoS control messages and settings, libadafs_qosnet qosd's and the
# relays' sessions to agents).
for lib in libadafs_common libadafs_session libadafs_qos libadafs_qosctl libadafs_qosnet; do
    archive=$build/common/.libs/$lib.a
    if [ -f "$archive" ]; then
        # (ASan adds an ODR indicator __odr_asan.NAME beside each global
        # variable NAME: the name it carries is what must be adafs_*.)
        bare=$(nm --defined-only -g "$archive" | awk 'NF == 3 {print $3}' | sed 's/^__odr_asan\.//' |
               grep -v '^adafs_' | sort -u)
        [ -n "$bare" ] && diag "add to common/linknames.h:" $bare
        check "every global symbol of common/$lib is adafs_*" -- test -z "$bare"
    else
        skip "$archive not built"
    fi
done
tap_done
