#!/bin/sh
# Installs Session Supervisor for the current user, in the XDG locations
# desktops look in, without root:
#   the binary         ~/.local/bin/session-supervisor
#   the desktop entry  ${XDG_DATA_HOME:-~/.local/share}/applications/session-supervisor.desktop
#   the icons          ${XDG_DATA_HOME:-~/.local/share}/icons/hicolor/NxN/apps/session-supervisor.png
#
#   ./install.sh              install (again: it overwrites its own files)
#   ./install.sh --service    install, then `session-supervisor service install`
#                             (start with the desktop session, restart after a crash)
#   ./install.sh --uninstall  remove the service (if installed) and exactly these files
#
# It runs from the unpacked release tarball (files beside it) or from a source
# checkout after `make build` (bin/ and assets/icons/ two levels up). Your data
# directory (~/.local/share/session-supervisor) is never touched.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
data_home=${XDG_DATA_HOME:-$HOME/.local/share}
case "$data_home" in /*) ;; *) data_home=$HOME/.local/share ;; esac # the XDG spec ignores relative paths
bin_dir=$HOME/.local/bin
app_dir=$data_home/applications
icon_root=$data_home/icons/hicolor
sizes="16 32 48 64 128 256"
name=session-supervisor

mode=install
for arg in "$@"; do
  case "$arg" in
    --uninstall) mode=uninstall ;;
    --service) mode=install-service ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown option $arg (try --help)" >&2; exit 2 ;;
  esac
done

# Where the pieces are: the tarball layout first, then a source checkout.
if [ -f "$here/$name" ]; then
  src_bin=$here/$name
  src_hook=$here/$name-hook
  icon_src() { echo "$here/icons/hicolor/${1}x${1}/apps/$name.png"; }
else
  src_bin=$here/../../bin/$name
  src_hook=$here/../../bin/$name-hook
  icon_src() { echo "$here/../../assets/icons/app-$1.png"; }
fi

# rmdir_empty removes the directories install may have created, deepest
# first, only while they are empty: a directory with anything else in it is
# not ours to remove.
rmdir_empty() {
  for d in "$@"; do rmdir "$d" 2>/dev/null || true; done
}

if [ "$mode" = uninstall ]; then
  if [ -x "$bin_dir/$name" ]; then
    "$bin_dir/$name" service uninstall || echo "install.sh: could not remove the service (see above); removing the files anyway" >&2
  fi
  rm -f "$bin_dir/$name" "$bin_dir/$name-hook" "$app_dir/$name.desktop"
  for s in $sizes; do
    rm -f "$icon_root/${s}x${s}/apps/$name.png"
    rmdir_empty "$icon_root/${s}x${s}/apps" "$icon_root/${s}x${s}"
  done
  rmdir_empty "$icon_root" "$data_home/icons" "$app_dir" "$bin_dir"
  echo "Removed Session Supervisor's binary, desktop entry and icons."
  exit 0
fi

for f in "$src_bin" "$src_hook"; do
  if [ ! -f "$f" ]; then
    echo "install.sh: no binary at $f: run 'make build' first (or use the release tarball)" >&2
    exit 1
  fi
done
for s in $sizes; do
  if [ ! -f "$(icon_src "$s")" ]; then
    echo "install.sh: missing icon $(icon_src "$s")" >&2
    exit 1
  fi
done

mkdir -p "$bin_dir" "$app_dir"
# Copy to a temporary name and rename, so a running copy of the old binary
# keeps working and a failed copy never leaves half a binary.
cp "$src_bin" "$bin_dir/.$name.new"
chmod 755 "$bin_dir/.$name.new"
mv -f "$bin_dir/.$name.new" "$bin_dir/$name"
# The Claude Code hook program lives beside the app, where `hooks install`
# looks for it.
cp "$src_hook" "$bin_dir/.$name-hook.new"
chmod 755 "$bin_dir/.$name-hook.new"
mv -f "$bin_dir/.$name-hook.new" "$bin_dir/$name-hook"

for s in $sizes; do
  mkdir -p "$icon_root/${s}x${s}/apps"
  cp "$(icon_src "$s")" "$icon_root/${s}x${s}/apps/$name.png"
  chmod 644 "$icon_root/${s}x${s}/apps/$name.png"
done

# The entry names the binary by absolute path, since a desktop session's
# PATH often lacks ~/.local/bin; quoted, as the desktop entry spec allows, in
# case the home directory has a space.
sed -e "s|^Exec=$name |Exec=\"$bin_dir/$name\" |" -e "s|^TryExec=$name\$|TryExec=$bin_dir/$name|" \
  "$here/$name.desktop" > "$app_dir/.$name.desktop.new"
chmod 644 "$app_dir/.$name.desktop.new"
mv -f "$app_dir/.$name.desktop.new" "$app_dir/$name.desktop"

echo "Installed Session Supervisor:"
echo "  $bin_dir/$name"
echo "  $bin_dir/$name-hook"
echo "  $app_dir/$name.desktop"
echo "  $icon_root/{$(echo $sizes | sed 's/\([0-9]*\)/\1x\1/g; s/ /,/g')}/apps/$name.png"
case ":$PATH:" in
  *":$bin_dir:"*) ;;
  *) echo "Note: $bin_dir is not on your PATH; add it to use the session-supervisor command in a terminal." ;;
esac

if [ "$mode" = install-service ]; then
  "$bin_dir/$name" service install
else
  echo "To start it with your desktop session: $bin_dir/$name service install"
fi
