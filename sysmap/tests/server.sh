#!/bin/sh
# A real sysmap-server on 127.0.0.1 (free port, bounded lifetime), fed by
# real sysmap uploads (token and munge, with a private munged) and by curl
# with malformed requests. Each bad request gets its exact error, nothing
# in a value is executed, and the server keeps serving.
. "${srcdir:-.}/tests/lib.sh"

printf 'test-token-0123456789abcdef\n' >"$TMP/token"
chmod 600 "$TMP/token"

# A private munged, stopped at exit (munged -s stops the one on our socket).
SOCK="$TMP/munge.sock"
dd if=/dev/urandom of="$TMP/munge.key" bs=1024 count=1 2>/dev/null
chmod 600 "$TMP/munge.key"
have_munge=no
if munged -f --socket="$SOCK" --key-file="$TMP/munge.key" --pid-file="$TMP/munged.pid" \
       --log-file="$TMP/munged.log" --seed-file="$TMP/munged.seed" 2>"$TMP/munged.err"; then
    have_munge=yes
fi
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
    [ "$have_munge" = yes ] && munged -s --socket="$SOCK" >/dev/null 2>&1
    rm -rf "$TMP" ${RO:+"$RO"}
}
trap cleanup EXIT

out=$(./sysmap-server --db "$TMP/x.db" 2>&1); rc=$?
is "$rc:$out" "2:sysmap-server: refusing to accept unauthenticated uploads; give --token-file FILE and/or --munge" \
   "refuses to run without authentication"
printf 'test-token-0123456789abcdef\n' >"$TMP/open-token"
chmod 644 "$TMP/open-token"
out=$(./sysmap-server --db "$TMP/x.db" --token-file "$TMP/open-token" 2>&1); rc=$?
is "$rc:$out" "1:sysmap-server: token file $TMP/open-token: mode 0644 lets others read it; chmod 600 it" \
   "refuses a token file others can read"

munge_opts=
[ "$have_munge" = yes ] && munge_opts="--munge --munge-socket $SOCK"
# shellcheck disable=SC2086
./sysmap-server --db "$TMP/s.db" --listen 127.0.0.1 --port 0 --port-file "$TMP/port" \
    --token-file "$TMP/token" $munge_opts --allow 'node[1-3],admin' --max-body 65536 \
    --timeout 2 --max-connections 16 --lifetime 120 --log "$TMP/server.log" &
server_pid=$!
i=0
while [ ! -s "$TMP/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
PORT=$(cat "$TMP/port" 2>/dev/null)
check "server listens on a free port ($PORT)" test -n "$PORT"
URL="http://127.0.0.1:$PORT/upload"

# post WHAT CURL-ARGS...: prints "STATUS BODY"
post() {
    curl -s -o "$TMP/body" -w '%{http_code}' --max-time 20 "$@" >"$TMP/code" 2>/dev/null
    printf '%s %s' "$(cat "$TMP/code")" "$(cat "$TMP/body")"
}
AUTH="Authorization: Bearer test-token-0123456789abcdef"

./sysmap --upload "$URL" --token-file "$TMP/token" --root "$FIX" --host node1
is "$?" 0 "sysmap --upload with the token"
is "$(./sysquery --db "$TMP/s.db" -n node1 --deploy --compact | jq -r '.hosts[0].deploy.storage_path')" /local \
   "node1's upload is in the database"

if [ "$have_munge" = yes ]; then
    ./sysmap --upload "$URL" --munge --munge-socket "$SOCK" --root "$FIX" --host node2
    is "$?" 0 "sysmap --upload with a munge credential"
    cred=$(munge -S "$SOCK" -s "sysmap-upload v1 host=node3 xxh64=0000000000000000 len=2")
    is "$(post -H "Authorization: Munge $cred" --data-binary '{}' "$URL")" \
       '401 {"error":"munge credential does not match the body (digest or length differs)"}' \
       "munge credential for another body"
    is "$(post -H "Authorization: Munge $cred" --data-binary '{}' "$URL")" \
       '401 {"error":"munge credential rejected: Replayed credential"}' "replayed munge credential"
    cred=$(munge -S "$SOCK" -s "sysmap-upload v1 host=node3 xxh64=0000000000000000 len=2")
    is "$(post -H "Authorization: Munge $cred" --data-binary '{ }' "$URL")" \
       '401 {"error":"munge credential is for a body of 2 bytes, not 3"}' \
       "munge credential for a body of another length: refused before the body is read"
    printf '{"host":"node3","extractors":{"cpu":{}}}' >"$TMP/node3.json"
    cred=$(./tests/munge_cred "$SOCK" node2 "$TMP/node3.json")
    is "$(post -H "Authorization: $cred" --data-binary @"$TMP/node3.json" "$URL")" \
       '403 {"error":"report is for host node3 but the upload is authenticated as node2"}' \
       "valid credential of node2 carrying node3's report"
    is "$(post -H "Authorization: Munge garbage" --data-binary '{}' "$URL")" \
       '401 {"error":"munge credential rejected: Failed to match armor prefix"}' "forged munge credential"
else
    nok "munged could not start here: $(cat "$TMP/munged.err")"
fi

is "$(post --data-binary '{}' "$URL")" '401 {"error":"no Authorization header"}' "no credentials"
is "$(post -H "Authorization: Bearer wrong-token-0123456789" --data-binary '{}' "$URL")" \
   '401 {"error":"wrong token"}' "wrong token"
is "$(post -H "Authorization: Basic eDp5" --data-binary '{}' "$URL")" \
   '401 {"error":"unknown Authorization scheme (want Bearer or Munge)"}' "unknown scheme"
is "$(post -H "$AUTH" --data-binary '{"host":"node1","extractors":' "$URL")" \
   '400 {"error":"report is not valid JSON: line 1 column 29: unexpected token near end of file"}' "bad JSON"
is "$(post -H "$AUTH" --data-binary '{"host":"intruder","extractors":{"cpu":{}}}' "$URL")" \
   '403 {"error":"host intruder is not in the --allow list"}' "host outside --allow"
is "$(post -H "$AUTH" --data-binary '{"host":"node1;DROP TABLE host","extractors":{"cpu":{}}}' "$URL")" \
   '400 {"error":"report has no valid \"host\""}' "SQL in the host name rejected"
is "$(post -H "$AUTH" --data-binary '{"host":"node1","extractors":{"x);--":{}}}' "$URL")" \
   '400 {"error":"report for node1: extractor name \"x);--\" is not [a-z0-9_]{1,32}"}' "SQL in an extractor name rejected"
head -c 100000 /dev/zero | tr '\0' ' ' >"$TMP/big"
is "$(post -H "$AUTH" -H 'Content-Type: application/json' --data-binary @"$TMP/big" "$URL")" \
   '413 {"error":"report of 100000 bytes is over the limit of 65536"}' "oversized body"
is "$(post -H "$AUTH" -H 'Transfer-Encoding: chunked' --data-binary '{}' "$URL")" \
   '501 {"error":"chunked request bodies are not supported"}' "chunked body"
is "$(post "$URL")" '405 {"error":"/upload takes POST"}' "GET /upload"
is "$(post "http://127.0.0.1:$PORT/etc/passwd")" '404 {"error":"no such resource: GET /etc/passwd"}' "unknown path"

# SQL metacharacters in values are data: stored and returned verbatim.
evil="x'); DROP TABLE data; DELETE FROM host; --\" \\\\ %s \$(id)"
body=$(jq -cn --arg m "$evil" '{host: "node3", extractors: {cpu: {model: $m}}}')
is "$(post -H "$AUTH" --data-binary "$body" "$URL")" '200 {"status":"stored","host":"node3"}' \
   "report with SQL metacharacters accepted"
is "$(./sysquery --db "$TMP/s.db" -n node3 -e cpu --compact | jq -r '.hosts[0].extractors.cpu.value.model')" \
   "$evil" "stored verbatim"
is "$(./sysquery --db "$TMP/s.db" --compact | jq -r '[.hosts[].host] | join(",")')" \
   "$( [ "$have_munge" = yes ] && echo node1,node2,node3 || echo node1,node3)" "no table dropped, no host deleted"

# Raw sockets for what curl will not send: a silent client holding the only
# connection slot, a garbage request line, an oversized head.
raw() { # raw PAYLOAD-PYTHON-EXPR HOLD-SECONDS: prints the reply's first line
    python3 - "$PORT" "$2" <<PY
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall($1)
time.sleep(float(sys.argv[2]))
s.settimeout(10)
data = b""
try:
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
except OSError:
    pass
print(data.split(b"\r\n")[0].decode(), data.split(b"\r\n\r\n", 1)[-1].decode().strip())
PY
}
raw 'b""' 0 >"$TMP/silent" &
silent=$!
sleep 0.3
start=$(date +%s)
./sysmap --upload "$URL" --token-file "$TMP/token" --root "$FIX" --host node1 -e kernel
is "$?" 0 "an upload behind a silent client still succeeds"
check "within the 2 s --timeout (took $(( $(date +%s) - start )) s)" test $(( $(date +%s) - start )) -le 4
wait $silent
is "$(cat "$TMP/silent")" 'HTTP/1.1 408 Request Timeout {"error":"timed out reading the request head"}' \
   "the silent client gets 408"
is "$(raw 'b"GARBAGE\r\n\r\n"' 0)" 'HTTP/1.1 400 Bad Request {"error":"bad request line \"GARBAGE\""}' \
   "garbage request line"
is "$(raw 'b"POST /upload HTTP/1.1\r\nX-Pad: " + b"a" * 20000 + b"\r\n\r\n"' 0)" \
   'HTTP/1.1 431 Request Header Fields Too Large {"error":"request head longer than 16384 bytes"}' \
   "oversized request head"
is "$(raw 'b"POST /upload HTTP/1.1\r\nContent-Length: 12x\r\n\r\n"' 0)" \
   'HTTP/1.1 400 Bad Request {"error":"bad or repeated Content-Length \"12x\""}' "bad Content-Length"
is "$(raw 'b"POST /upload HTTP/1.1\r\nAuthorization: Bearer test-token-0123456789abcdef\r\nContent-Length: 100\r\n\r\n{\"host\":"' 0)" \
   'HTTP/1.1 408 Request Timeout {"error":"timed out after 8 of 100 body bytes"}' "body shorter than Content-Length"
is "$(raw 'b"POST /upload HTTP/1.1\r\nAuthorization: Bearer test-token-0123456789abcdef\r\n\r\n"' 0)" \
   'HTTP/1.1 411 Length Required {"error":"Content-Length required"}' "no Content-Length"

# Many idle connections (more than --max-connections, from one address
# and from ten) do not block a valid upload: those that showed no
# credentials are evicted, oldest first; the server keeps one thread per
# connection it holds, no more.
hold() { # hold COUNT-PER-ADDRESS FIRST-ADDRESS LAST-ADDRESS SECONDS: idle connections
    python3 - "$PORT" "$@" "$TMP/held" <<'PY' &
import socket, sys, time
port, each, first, last, secs, ready = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
conns = []
for a in range(first, last + 1):
    for _ in range(each):
        s = socket.socket()
        s.bind(("127.0.0.%d" % a, 0))
        s.connect(("127.0.0.1", port))
        conns.append(s)
open(ready, "w").write("%d\n" % len(conns))
time.sleep(secs)
PY
    holder=$!
    i=0
    while [ ! -s "$TMP/held" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
}
# upload_behind EACH FIRST LAST WHAT: EACH idle connections from each of
# 127.0.0.FIRST..LAST, then an upload from 127.0.0.1
upload_behind() {
    rm -f "$TMP/held"
    hold "$1" "$2" "$3" 3
    is "$(cat "$TMP/held")" $(( $1 * ($3 - $2 + 1) )) "$4 are open"
    start=$(date +%s%N)
    ./sysmap --upload "$URL" --token-file "$TMP/token" --root "$FIX" --host node1 -e kernel
    is "$?" 0 "an upload behind them succeeds"
    took=$(( ($(date +%s%N) - start) / 1000000 ))
    check "at once (took $took ms)" test "$took" -lt 1500
    threads=$(awk '/^Threads:/ {print $2}' /proc/$server_pid/status)
    check "the server holds one thread per connection it serves, at most 16 + 1 ($threads)" \
        test "$threads" -le 17
    wait "$holder"
}
upload_behind 40 1 1 "40 idle connections from the uploader's own address"
upload_behind 10 2 11 "100 idle connections from ten addresses"
evictions=$(grep -c 'evicted a connection from' "$TMP/server.log")
check "the log names the evictions, in a few lines for 140 connections ($evictions)" \
    test "$evictions" -ge 1 -a "$evictions" -le 10
got=$(python3 - "$PORT" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
t0 = time.time()
reply = b""
try:
    for b in b"POST /upload HTTP/1.1\r\nX-Slow: " + b"a" * 40:
        s.sendall(bytes([b]))
        time.sleep(0.1)
except OSError:
    pass
s.settimeout(5)
try:
    reply = s.recv(4096)
except OSError:
    pass
print(reply.split(b"\r\n")[0].decode(), int(time.time() - t0 < 3.5))
PY
)
is "$got" "HTTP/1.1 408 Request Timeout 1" "a head trickling in byte by byte gets 408 at the head's deadline"
before=$(grep -c 'bad request line' "$TMP/server.log")
python3 - "$PORT" <<'PY'
import socket, sys
for _ in range(300):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(b"GARBAGE\r\n\r\n")
    s.recv(4096)
    s.close()
PY
garbage=$(( $(grep -c 'bad request line' "$TMP/server.log") - before ))
check "300 garbage requests: at most 10 log lines per 10 s ($garbage)" test "$garbage" -le 20

is "$(post "http://127.0.0.1:$PORT/health")" '200 {"status":"ok"}' "still serving after the bad requests"
./sysmap --upload "$URL" --token-file "$TMP/token" --root "$FIX" --host node1 -e kernel
is "$?" 0 "and still storing"
out=$(./sysmap --upload "$URL" --token-file "$TMP/token" --root "$FIX" --host intruder -e kernel 2>&1); rc=$?
is "$rc:$out" "1:sysmap: upload to $URL: HTTP 403: {\"error\":\"host intruder is not in the --allow list\"}" \
   "sysmap reports the server's refusal"

# The Slurm plugin reads the database as the Slurm user, without write
# access to its directory: while the server runs (WAL) and after it stops.
reader_check() { # reader_check WHAT
    if [ "$(id -u)" != 0 ]; then
        ok "# SKIP $1 (needs root to switch to nobody)"
        return
    fi
    rm -rf "$RO"; mkdir -m 755 "$RO"
    cp ./sysquery "$RO/sysquery"
    got=$(su nobody -s /bin/sh -c "$RO/sysquery --db $TMP/s.db -n node1 -e kernel" 2>&1 |
          jq -r '.hosts[0].extractors.kernel.value.release' 2>&1)
    is "$got" 6.1.0-18-amd64 "$1"
}
RO=$(mktemp -d "${TMPDIR:-/tmp}/sysmap-ro.XXXXXX")
chmod 755 "$TMP" "$RO"
reader_check "an unprivileged reader reads the database while the server writes"

kill "$server_pid"
i=0
while kill -0 "$server_pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
check "server stops on SIGTERM" sh -c "! kill -0 $server_pid 2>/dev/null"
server_pid=
check "log says why it stopped" grep -q "stopping on a signal" "$TMP/server.log"
reader_check "and after the server stopped"
rm -rf "$RO"
check "log names the refused requests" grep -q "413: report of 100000 bytes is over the limit" "$TMP/server.log"
out=$(./sysmap --upload "$URL" --token-file "$TMP/token" --root "$FIX" --host node1 -e kernel 2>&1); rc=$?
is "$rc:$(echo "$out" | sed 's/Failed to connect.*/Failed to connect/;s/Couldn.t connect.*/Failed to connect/')" \
   "1:sysmap: upload to $URL: Failed to connect" "upload to a stopped server fails with curl's reason"
finish
