# Memory of a virtual machine for the benchmarks (POSIX sh, sourced by
# bench/fs/run.sh and bench/stage/run.sh).
#
# On these VMs the balloon driver hands memory left free back to the host
# (free page reporting), and the first touch of such a page costs a fault
# on the host: `cp` of a 1 GiB file took 0.3-0.7 s into memory freed just
# before and 4 s into memory the host had taken back (sys time both). Which
# tool of a comparison got which was an accident of timing, and a
# multi-second run had its memory taken away while it ran. So:
#
# hold_free_memory: where the kernel exposes the reporting's knobs
#   (/sys/module/page_reporting/parameters: min_free_ms, how long a page
#   stays free before it is reported; max_waiting_mib, how much may wait),
#   keeps freed memory in the guest for a minute, up to 32 GiB, until
#   release_free_memory (call it from the EXIT trap) puts the old values
#   back. Elsewhere it says so and does nothing.
# warm_memory BYTES: touches and frees BYTES, so the timed run that follows
#   writes into memory the host backs, whichever tool it is. WARM=0: not.

page_reporting=/sys/module/page_reporting/parameters
held_min_free_ms= held_max_waiting_mib=

hold_free_memory() {
    if ! test -w "$page_reporting/min_free_ms" || ! test -w "$page_reporting/max_waiting_mib"; then
        echo "vm_memory: no writable $page_reporting: free memory may go back to the host during runs" >&2
        return 0
    fi
    held_min_free_ms=$(cat "$page_reporting/min_free_ms")
    held_max_waiting_mib=$(cat "$page_reporting/max_waiting_mib")
    if ! echo 60000 > "$page_reporting/min_free_ms" || ! echo 32768 > "$page_reporting/max_waiting_mib"; then
        echo "vm_memory: cannot set $page_reporting (min_free_ms 60000, max_waiting_mib 32768)" >&2
        release_free_memory
        return 1
    fi
    echo "vm_memory: freed memory held for 60 s (was min_free_ms $held_min_free_ms, max_waiting_mib $held_max_waiting_mib)" >&2
}

release_free_memory() {
    test -n "$held_min_free_ms" || return 0
    echo "$held_min_free_ms" > "$page_reporting/min_free_ms" || echo "vm_memory: cannot restore $page_reporting/min_free_ms to $held_min_free_ms" >&2
    echo "$held_max_waiting_mib" > "$page_reporting/max_waiting_mib" || echo "vm_memory: cannot restore $page_reporting/max_waiting_mib to $held_max_waiting_mib" >&2
    held_min_free_ms= held_max_waiting_mib=
}

warm_memory() {
    test "${WARM:-1}" = 1 || return 0
    python3 -c '
import mmap, sys
size = int(sys.argv[1]) // 4096 * 4096
m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
for off in range(0, size, 4096):
    m[off] = 1
' "$1"
}
