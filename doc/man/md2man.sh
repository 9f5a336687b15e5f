#!/bin/sh
# md2man.sh SRC.md VERSION: the man page written in SRC.md, as roff, on stdout.
#
# Every man page of adafs is one Markdown file, doc/man/NAME.SECTION.md,
# rendered by lowdown(1) (Debian package lowdown). Conventions that make a
# good page (see adafs-agentd.8.md):
#   # NAME           "name - what it is", one line (whatis and apropos read it)
#   # SYNOPSIS, # DESCRIPTION, # OPTIONS, ... level-1 headings are sections
#   **--option** *ARG*
#   :   what it does          (a definition list: a tagged paragraph)
# Every option --help prints must be defined under a heading with OPTIONS
# in it, and nothing else there: check-help.sh compares the two.
#
# The page's date is SOURCE_DATE_EPOCH's when set (dpkg-buildpackage sets
# it from debian/changelog, so package builds are reproducible), else the
# source file's.
set -eu
src=$1 version=$2
file=$(basename "$src" .md)         # adafs-agentd.8
name=${file%.*} section=${file##*.}
lowdown=${LOWDOWN:-lowdown}
command -v "$lowdown" >/dev/null 2>&1 || {
    echo "md2man.sh: lowdown not found: it renders the man pages (apt-get install lowdown)" >&2
    exit 1
}
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
    date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)
else
    date=$(date -u -r "$src" +%Y-%m-%d)
fi
# --out-no-smarty: "--" must stay two hyphens, not become a dash.
# --parse-no-intraemph: snake_case and burst_buffer stay as written.
exec "$lowdown" -s -Tman --out-no-smarty --parse-no-intraemph --parse-no-metadata \
    -M "title=$name" -M "section=$section" -M "date=$date" \
    -M "source=adafs $version" -M "volume=adafs manual" "$src"
