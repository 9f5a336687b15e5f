#!/bin/sh
# Staging runs as the job user: a source the user cannot read is refused and
# reported, never copied, also through symlinks; a destination the user
# cannot write is refused; stage in/out will not run as root.
. "${srcdir:-.}/tests/lib.sh"
if [ "$(id -u)" -ne 0 ]; then echo "1..0 # SKIP needs root to create the test user"; exit 0; fi
U=adafs-test
id "$U" > /dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$U" ||
    { echo "1..0 # SKIP cannot create user $U"; exit 0; }
S=$WORK/src D=$WORK/userdst
mkdir -p "$S/public" "$S/rootonly" "$D"
chown "$U" "$D"
echo public > "$S/public/readable.txt"
echo secret > "$S/secret.txt"; chmod 0600 "$S/secret.txt"
echo inner > "$S/rootonly/inner.txt"; chmod 0700 "$S/rootonly"
ln -s ../secret.txt "$S/public/link-to-secret"

"$STAGE" copy --user "$U" --follow-symlinks --json "$S" "$D/out" > "$WORK/out.json" 2>/dev/null
is "as $U: exit status 1 (not everything copied)" $? 1
ok "readable file copied" cmp -s "$S/public/readable.txt" "$D/out/public/readable.txt"
is "copies belong to $U" "$(stat -c %U "$D/out/public/readable.txt")" "$U"
ok "root-only file not copied" test ! -e "$D/out/secret.txt"
ok "... reported with EACCES (errno 13)" grep -q "\"path\":\"$S/secret.txt\",\"errno\":13" "$WORK/out.json"
ok "root-only directory not entered" test ! -e "$D/out/rootonly/inner.txt"
ok "... reported with EACCES" grep -q "\"path\":\"$S/rootonly\",\"errno\":13" "$WORK/out.json"
ok "symlink to the root-only file: followed as $U, refused" test ! -e "$D/out/public/link-to-secret"
ok "... reported with EACCES" grep -q "\"path\":\"$S/public/link-to-secret\",\"errno\":13" "$WORK/out.json"

# The same refusal when the whole process is started as the user.
if runuser -u "$U" -- "$STAGE" --help > /dev/null 2>&1; then
    runuser -u "$U" -- "$STAGE" copy --json "$S" "$D/out2" > "$WORK/out2.json" 2>/dev/null
    is "run by runuser as $U: exit status 1" $? 1
    ok "root-only file refused there too" grep -q "\"path\":\"$S/secret.txt\",\"errno\":13" "$WORK/out2.json"
    ok "... and not copied" test ! -e "$D/out2/secret.txt"
else
    for i in 1 2 3; do n=$((n + 1)); echo "ok $n # SKIP $U cannot execute $STAGE (build dir not reachable)"; done
fi

# A destination the user may not write.
mkdir -p "$WORK/rootdst"; chmod 0755 "$WORK/rootdst"
"$STAGE" copy --user "$U" --json "$S/public" "$WORK/rootdst/x" > "$WORK/out3.json" 2>/dev/null
is "unwritable destination: exit status 1" $? 1
ok "... reported with EACCES" grep -q "\"path\":\"$WORK/rootdst/x\",\"errno\":13" "$WORK/out3.json"
ok "... nothing created" test ! -e "$WORK/rootdst/x"

# Another user against a distributed copy into a directory others write to
# (shared scratch): the workers' mailboxes go to DST/../.adafs-stage/ID, ID
# a hash of the request that anyone running the same request learns. A link
# planted there to one of the victim's directories once made worker 0 empty
# and remove its subdirectories as an earlier run's mailboxes; a directory
# of the attacker's there would have held the run. Both are refused now,
# naming the directory, and nothing of the victim's is touched.
A=adafs-test2
if runuser -u "$U" -- "$STAGE" --help > /dev/null 2>&1 &&
   { id "$A" > /dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$A"; }; then
    SH=$WORK/shared V=$WORK/victim
    mkdir -p "$SH" "$V/src" "$V/data/results"
    chmod 1777 "$SH"
    echo a > "$V/src/a.txt"
    echo precious > "$V/data/results/important.txt"
    chown -R "$U" "$V"
    # What the victim will run, as the attacker: the run's directory named.
    runuser -u "$A" -- "$STAGE" copy --worker 1/2 --peer-timeout 1 "$V/src" "$SH/out" \
        > /dev/null 2> "$WORK/probe.err"
    id=$(sed -n 's|.*/\.adafs-stage/\([0-9a-f]\{16\}\): nothing from it.*|\1|p' "$WORK/probe.err" | head -1)
    ok "the attacker learns the run's directory by running the same request ($id)" test -n "$id"
    runuser -u "$A" -- sh -c "rm -rf '$SH/.adafs-stage' && mkdir -m 755 '$SH/.adafs-stage' &&
                              ln -s '$V/data' '$SH/.adafs-stage/$id'"
    runuser -u "$U" -- sh -c "'$STAGE' copy --worker 0/2 '$V/src' '$SH/out' &
                              '$STAGE' copy --worker 1/2 --peer-timeout 2 '$V/src' '$SH/out' 2> /dev/null
                              wait" 2> "$WORK/w0.err"
    ok "a link planted as the run's directory: the victim's directory is untouched" \
        test -f "$V/data/results/important.txt"
    ok "... worker 0 refuses it, saying why" grep -q "not this user's own private directory" "$WORK/w0.err"
    runuser -u "$A" -- sh -c "rm '$SH/.adafs-stage/$id' && mkdir -m 777 '$SH/.adafs-stage/$id'"
    runuser -u "$U" -- "$STAGE" copy --worker 0/2 "$V/src" "$SH/out" 2> "$WORK/w0.err"
    is "the attacker's own directory as the run's: worker 0 exits 1" $? 1
    ok "... refusing it" grep -q "not this user's own private directory" "$WORK/w0.err"
    ok "... having written nothing there (no epoch for the attacker to read)" \
        test -z "$(ls -A "$SH/.adafs-stage/$id")"
else
    for i in 1 2 3 4 5 6; do n=$((n + 1)); echo "ok $n # SKIP $U cannot execute $STAGE or no user $A"; done
fi

# Root is never the stager's identity for stage in/out.
"$STAGE" in "$S" /in 2> "$WORK/err"
is "stage in as root without --user: exit 2" $? 2
ok "... says to use --user" grep -q "refusing to stage in as root" "$WORK/err"
"$STAGE" copy --user root "$S" "$WORK/x" 2> "$WORK/err"
is "--user root: exit 2" $? 2
ok "... refused: uid 0" grep -q "refusing to become uid or gid 0" "$WORK/err"
"$STAGE" copy --user no-such-user-xyz "$S" "$WORK/x" 2> "$WORK/err"
is "--user unknown: exit 2" $? 2
ok "... says no such user" grep -q "no-such-user-xyz: no such user" "$WORK/err"
done_testing
