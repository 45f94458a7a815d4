#!/usr/bin/env bash
# Runs a command (make unit's `go test`) with a temporary directory of its
# own, made fresh under $TMPDIR, and fails, listing them, when anything is
# left in it afterwards: what a test run writes to TMPDIR and does not
# remove (a CLI's extracted library, a helper binary a TestMain built)
# otherwise piles up in the developer's /tmp run after run. Then it removes
# the directory. The go command's own work directories (its builds, the
# test binaries) are in it too, and go removes them before it exits, so the
# check runs after the command has ended, never beside it. Processes still
# running with the directory as their TMPDIR are listed as well, and
# killed (a test that leaves one would keep writing there).
#
#   packaging/leftovers.sh COMMAND [ARG...]
set -uo pipefail

if [ $# -eq 0 ]; then
  echo "usage: $0 COMMAND [ARG...]" >&2
  exit 2
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/unit-tests.XXXXXX") || exit 1

TMPDIR=$dir "$@"
code=$?

left=$(cd "$dir" && find . -mindepth 1 -maxdepth 1 -printf '%P\n' | LC_ALL=C sort)
if [ -n "$left" ]; then
  echo "FAIL: the tests left $(printf '%s\n' "$left" | wc -l) entries in their TMPDIR ($dir, removed now):"
  (cd "$dir" && printf '%s\n' "$left" | while IFS= read -r e; do
    echo "  $e ($(du -sh -- "$e" 2>/dev/null | cut -f1))"
  done)
  code=1
fi
# Only what the command started inherits this TMPDIR (or one under it):
# those are killed, not left to write into a removed directory.
running=""
for env in /proc/[0-9]*/environ; do
  pid=${env#/proc/}
  pid=${pid%/environ}
  [ "$pid" = "$$" ] && continue
  if { tr '\0' '\n' <"$env" | grep -Eq "^TMPDIR=$dir(/|\$)"; } 2>/dev/null; then
    running+="  pid $pid: $({ tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-160; } 2>/dev/null)"$'\n'
    kill -KILL "$pid" 2>/dev/null
  fi
done
if [ -n "$running" ]; then
  echo "FAIL: processes the tests started still ran with their TMPDIR (killed now):"
  printf '%s' "$running"
  code=1
fi
rm -rf "$dir"
exit $code
