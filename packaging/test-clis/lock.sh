#!/bin/sh
# Regenerates the lockfile of each test CLI named (all when none is), after its
# pin changed in the Makefile and in NAME/package.json:
#   packaging/test-clis/lock.sh opencode
# `npm install --package-lock-only` leaves out the optional platform packages
# the registry does not answer for (the one this was run against serves only
# linux-x64's); npm ci then refuses the lockfile as out of sync. Those are
# added back with their platform and no integrity: npm ci skips them on any
# other platform, and the tests run on linux-x64, whose entries npm wrote.
set -eu
cd "$(dirname "$0")"
[ $# -gt 0 ] || set -- */
for name in "$@"; do
	name=${name%/}
	(cd "$name" && rm -f package-lock.json && npm install --package-lock-only --no-audit --no-fund)
	node - "$name/package-lock.json" <<'JS'
const fs = require("fs");
const file = process.argv[2];
const lock = JSON.parse(fs.readFileSync(file, "utf8"));
const pk = lock.packages;
for (const [key, entry] of Object.entries(pk)) {
	for (const [dep, version] of Object.entries(entry.optionalDependencies || {})) {
		const at = "node_modules/" + dep;
		if (pk[at]) continue;
		// opencode-<os>-<cpu>[-baseline][-musl], the names its wrapper lists.
		const parts = dep.split("/").pop().split("-").slice(1);
		const added = { version, optional: true, os: [parts[0] === "windows" ? "win32" : parts[0]], cpu: [parts[1]] };
		if (parts.includes("musl")) added.libc = ["musl"];
		pk[at] = added;
	}
}
const sorted = { "": pk[""] };
for (const k of Object.keys(pk).filter(Boolean).sort()) sorted[k] = pk[k];
lock.packages = sorted;
fs.writeFileSync(file, JSON.stringify(lock, null, 2) + "\n");
JS
done
