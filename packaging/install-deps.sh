#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages the build (PROFILE=build) or the tests
# (PROFILE=test) need, and only those dpkg-query reports missing: naming an
# already-installed -dev package can make apt upgrade unrelated mesa packages.
# Uses sudo only when not root. On other systems it prints what to install.
set -euo pipefail

profile=${1:-build}

# Fyne's GLFW links -lXrandr -lXxf86vm -lXi -lXcursor -lXinerama; gcc and
# pkg-config drive cgo (also needed by `go test -race`).
build_pkgs=(gcc pkg-config libgl1-mesa-dev libx11-dev libxcursor-dev libxrandr-dev
  libxinerama-dev libxi-dev libxxf86vm-dev)
# The tests also run the real app under Xvfb with a D-Bus session bus,
# install the real Claude Code CLI from npm, and cross-compile the Windows
# build with mingw-w64 (358 MB). Focus ("Go to terminal") is tested with
# real tmux, and with xterms and kitty (its tab picked through its remote
# control; 9 MB) under openbox (an EWMH window manager),
# raised through wmctrl and read back with xprop (x11-utils); the
# remote-machines tests reach a second supervisor through a real OpenSSH
# server on 127.0.0.1. The window is clicked and typed into with xdotool.
test_pkgs=(xvfb dbus dbus-x11 imagemagick npm gcc-mingw-w64-x86-64-win32
  tmux xterm kitty openbox wmctrl x11-utils openssh-server openssh-client xdotool)

case "$profile" in
  build) want=("${build_pkgs[@]}") ;;
  test) want=("${build_pkgs[@]}" "${test_pkgs[@]}") ;;
  *) echo "usage: $0 build|test" >&2; exit 2 ;;
esac

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: not a Debian/Ubuntu system; install by hand the equivalents of:" >&2
  echo "  ${want[*]}" >&2
  echo "  (macOS: Xcode command line tools; Windows: a C compiler such as MSYS2 gcc)" >&2
  exit 0
fi

missing=()
for p in "${want[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
# npm may come from a non-Debian Node.js install; that is fine.
if command -v npm >/dev/null 2>&1; then
  filtered=()
  for p in "${missing[@]}"; do [[ "$p" == npm ]] || filtered+=("$p"); done
  missing=("${filtered[@]}")
fi

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-deps: need root to install: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
