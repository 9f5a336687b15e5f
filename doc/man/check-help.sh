#!/bin/bash
# check-help.sh: every program `make install` installs has a man page, every
# installed man page renders without a warning and has a NAME line, and the
# options each program's --help prints are exactly those its man page
# defines under its OPTIONS headings (see md2man.sh). A new program without
# a page, or a new option missing from either side, fails here.
#
# It installs the build into a scratch DESTDIR and reads what is there, so
# it sees what a package would contain, not a list kept by hand.
set -u
. "$abs_top_srcdir/tests/lib.sh"

for tool in man perl lexgrog; do
    command -v "$tool" >/dev/null || skip_all "$tool not installed (Debian package man-db / perl)"
done

dest=$(mktemp -d "${TMPDIR:-/tmp}/adafs-man-check.XXXXXX")
trap 'rm -rf "$dest"' EXIT
if ! make -s -C "$abs_top_builddir" install DESTDIR="$dest" >"$dest.log" 2>&1; then
    cat "$dest.log" | sed 's/^/# /'
    rm -f "$dest.log"
    ok 1 "make install DESTDIR=$dest"
    tap_done
fi
rm -f "$dest.log"
man=$dest$mandir

# The options a text names: --long (up to any =value) and -x.
options_in() {
    perl -ne 'print "$1\n" while /(?<![\w-])(--[A-Za-z0-9][\w-]*|-[A-Za-z])(?!\w)/g' |
        grep -v -x -e --help -e -h | sort -u
}
quietly() { "$@" >/dev/null 2>&1; }
render() {  # render PAGE: the page as text, one paragraph a line, no hyphenation
    MANWIDTH=4000 man --nh --nj -l "$1"
}
# The text of every section whose heading has OPTIONS in it.
options_sections() {
    awk '/^[A-Z]/ { in_opts = /OPTIONS/; next } in_opts'
}

pages=$(find "$man" -type f -name '*.[0-9]' | sort)
for page in $pages; do
    name=${page#"$man/"}
    warnings=$(render "$page" 2>&1 >/dev/null)
    check "man -l $name renders without warnings${warnings:+: $warnings}" -- test -z "$warnings"
    check "$name has a NAME line for whatis" -- quietly lexgrog "$page"
done

for dir in "$bindir" "$sbindir"; do
    [ -d "$dest$dir" ] || continue
    for prog in "$dest$dir"/*; do
        name=$(basename "$prog")
        page=$(ls "$man/man1/$name.1" "$man/man8/$name.8" 2>/dev/null | head -1)
        if [ -z "$page" ]; then
            ok 1 "$name has a man page (write doc/man/$name.1.md or .8.md)"
            continue
        fi
        ok 0 "$name has a man page ($(basename "$page"))"
        help=$(LD_LIBRARY_PATH=$dest$libdir "$prog" --help)
        check "$name --help succeeds" -- test $? = 0
        from_help=$(options_in <<<"$help")
        from_man=$(render "$page" 2>/dev/null | options_sections | options_in)
        only_help=$(comm -23 <(echo "$from_help") <(echo "$from_man") | xargs)
        only_man=$(comm -13 <(echo "$from_help") <(echo "$from_man") | xargs)
        check "$name: --help and man page name the same options${only_help:+; only in --help: $only_help}${only_man:+; only in the man page: $only_man}" -- \
            test -z "$only_help$only_man" -a -n "$from_help"
    done
done
tap_done
