# sets.sh: the data sets of the stager benchmarks (sourced by run.sh and
# workers.sh; needs W, SMALL, MID, BIG, BIGMIB and say).
#   small   SMALL (100,000) files of 4 KiB in 100 directories
#   mid     MID (1,000) files of 1 MiB in 10 directories
#   big     BIG (4) files of BIGMIB (1,024) MiB
#   uneven  one directory of 30,000 files of 4 KiB, five chains 200
#           directories deep with 10 files at each level, 100 directories
#           of 100 files of 1-64 KiB with four files of 256 MiB among them
#           (about 50,000 files, 1.3 GiB)

# Each set is generated once and reused while its parameters stay the
# same (the stamps live outside the copied trees).
make_set() {
    local set=$1 stamp
    case $set in small) stamp=$SMALL ;; mid) stamp=$MID ;; big) stamp="$BIG $BIGMIB" ;;
    uneven) stamp="uneven 1" ;; esac
    mkdir -p "$W/src" "$W/stamps"
    if [ -d "$W/src/$set" ] && [ "$(cat "$W/stamps/$set" 2>/dev/null)" = "$stamp" ]; then
        say "reusing data in $W/src/$set"
        return
    fi
    say "generating data in $W/src/$set"
    rm -rf "$W/src/$set" "$W/stamps/$set"; mkdir -p "$W/src/$set"
    case $set in
    small|mid) python3 - "$W/src" "$set" "$stamp" <<'PY'
import os, sys
root, which, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
block = os.urandom(1 << 20)
for i in range(count):
    if which == "small":
        d = os.path.join(root, "small", "d%03d" % (i % 100))
        if i < 100: os.mkdir(d)
        with open(os.path.join(d, "f%06d" % i), "wb") as f:
            off = (i * 4096) % (1 << 20)
            f.write(block[off:off + 4096])
    else:
        d = os.path.join(root, "mid", "d%02d" % (i % 10))
        if i < 10: os.mkdir(d)
        with open(os.path.join(d, "f%04d" % i), "wb") as f:
            f.write(block[i % 4096:] + block[:i % 4096])
PY
    ;;
    big)
        head -c $((BIGMIB << 20)) /dev/urandom > "$W/src/big/g0"
        for i in $(seq 1 $((BIG - 1))); do cp "$W/src/big/g0" "$W/src/big/g$i"; done
        ;;
    uneven) python3 - "$W/src/uneven" <<'PY'
# One directory of 30,000 files; five chains 200 directories deep with 10
# files at each level; 100 directories of 100 files of 1-64 KiB with four
# files of 256 MiB among them.
import os, sys
root = sys.argv[1]
block = os.urandom(1 << 20)
def put(path, size, salt):
    with open(path, "wb") as f:
        off = (salt * 4099) % ((1 << 20) - size) if size < (1 << 20) else 0
        if size <= (1 << 20):
            f.write(block[off:off + size])
        else:
            for i in range(size >> 20):
                f.write(block[i % 7:] + block[:i % 7])
os.mkdir(os.path.join(root, "one"))
for i in range(30000):
    put(os.path.join(root, "one", "f%05d" % i), 4096, i)
for c in range(5):
    d = os.path.join(root, "deep%d" % c)
    for level in range(200):
        d = os.path.join(d, "l%03d" % level)
        os.makedirs(d)
        for i in range(10):
            put(os.path.join(d, "f%d" % i), 4096, c * 2000 + level * 10 + i)
for j in range(100):
    d = os.path.join(root, "mixed", "m%03d" % j)
    os.makedirs(d)
    for i in range(100):
        put(os.path.join(d, "f%03d" % i), 1024 * (1 + (i * 7 + j) % 64), j * 100 + i)
for i in range(4):
    put(os.path.join(root, "mixed", "m%03d" % (i * 25), "huge%d" % i), 256 << 20, i)
PY
        ;;
    esac
    echo "$stamp" > "$W/stamps/$set"
    sync
}

