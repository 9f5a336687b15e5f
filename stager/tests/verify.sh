#!/bin/sh
# --verify re-reads each destination and compares XXH3 checksums: storage
# that corrupts a write (simulated by an LD_PRELOAD shim) is caught, the file
# is reported with EIO and removed; without --verify it goes unnoticed.
. "${srcdir:-.}/tests/lib.sh"
# ASan wants to be first in the library list; the shim does not care.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0; export ASAN_OPTIONS
SHIM=${CORRUPT_SHIM:-$PWD/tests/.libs/corrupt_preload.so}
if [ ! -f "$SHIM" ]; then echo "1..0 # SKIP $SHIM not built"; exit 0; fi
S=$WORK/src
mkdir -p "$S"
head -c 100000 /dev/urandom > "$S/small-bad"        # create_write path
head -c 3000000 /dev/urandom > "$S/stream-bad"      # streamed path
head -c 5000000 /dev/urandom > "$S/split-bad"       # pieces (--piece-size 1M)
head -c 100000 /dev/urandom > "$S/good"

LD_PRELOAD=$SHIM CORRUPT_NAME=-bad "$STAGE" copy --json "$S" "$WORK/plain" > "$WORK/plain.json" 2>/dev/null
is "without --verify the corrupted copy exits 0" $? 0
ok "... and the damage is there" sh -c "! cmp -s '$S/small-bad' '$WORK/plain/small-bad'"

LD_PRELOAD=$SHIM CORRUPT_NAME=-bad "$STAGE" copy --verify --piece-size 1M --json "$S" "$WORK/v" > "$WORK/v.json" 2>/dev/null
is "with --verify: exit status 1" $? 1
is "three files failed verification" "$(json_field "$WORK/v.json" errors)" 3
for f in small-bad stream-bad split-bad; do
    ok "$f reported: EIO, checksum differs" grep -q "\"path\":\"$S/$f\",\"errno\":5,\"error\":\"Input/output error\",\"what\":\"verify: destination differs from source (XXH3)\"" "$WORK/v.json"
    ok "$f: damaged copy removed" test ! -e "$WORK/v/$f"
done
ok "the intact file was copied and verified" cmp -s "$S/good" "$WORK/v/good"
done_testing
