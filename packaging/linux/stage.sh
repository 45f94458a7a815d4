#!/bin/sh
# Lays out the Linux release in DEST: the binary, the Claude Code hook program
# built beside it (session-supervisor-hook: `hooks install` looks for it next
# to the app), install.sh, the desktop entry and the app icons in their
# hicolor tree (icons/hicolor/NxN/apps/).
# `make package-linux` tars the result; the tests install from it.
#
#   packaging/linux/stage.sh BINARY DEST
set -eu

if [ $# -ne 2 ]; then
  echo "usage: $0 BINARY DEST" >&2
  exit 2
fi
bin=$1
dest=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
name=session-supervisor

mkdir -p "$dest"
cp "$bin" "$dest/$name"
chmod 755 "$dest/$name"
hook=$(dirname "$bin")/$name-hook
if [ ! -f "$hook" ]; then
  echo "stage.sh: no hook program at $hook: build it with 'make build'" >&2
  exit 1
fi
cp "$hook" "$dest/$name-hook"
chmod 755 "$dest/$name-hook"
cp "$here/install.sh" "$here/$name.desktop" "$dest/"
chmod 755 "$dest/install.sh"
if [ -f "$root/README.md" ]; then cp "$root/README.md" "$dest/"; fi
# The icons are drawn once, in assets/ (the app embeds the same files).
for s in 16 32 48 64 128 256; do
  mkdir -p "$dest/icons/hicolor/${s}x${s}/apps"
  cp "$root/assets/icons/app-$s.png" "$dest/icons/hicolor/${s}x${s}/apps/$name.png"
done
