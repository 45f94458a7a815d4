// Command vulndb-index builds the offline vulnerability database that
// govulncheck reads in `make lint` (`govulncheck -db file://DIR`) from a
// directory of OSV entries: the data/osv folder of the pinned
// golang.org/x/vulndb module, which the Go module proxy serves while
// vuln.go.dev may be out of reach (CI behind a proxy, this machine).
//
// It writes the v1 layout govulncheck's client reads (index/db.json,
// index/modules.json, index/vulns.json, ID/<id>.json), with the same index
// contents as the vulndb module's own cmd/indexdb. That command would do, but
// building it pulls in the vulndb module's cloud dependencies (about 4
// minutes on two cores, measured); this one needs the standard library only.
package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	vulns := flag.String("vulns", "", "directory of OSV JSON files (the vulndb module's data/osv)")
	out := flag.String("out", "", "directory to write the database to")
	flag.Parse()
	if *vulns == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: vulndb-index -vulns DIR -out DIR")
		os.Exit(2)
	}
	n, err := build(*vulns, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vulndb-index:", err)
		os.Exit(1)
	}
	fmt.Printf("vulndb-index: %d entries written to %s\n", n, *out)
}

// entry is the part of an OSV entry the indexes are made of; the entry
// itself is written as it came.
type entry struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Aliases  []string  `json:"aliases"`
	Affected []struct {
		Package struct {
			Name string `json:"name"`
		} `json:"package"`
		Ranges []osvRange `json:"ranges"`
	} `json:"affected"`
}

type osvRange struct {
	Type   string `json:"type"`
	Events []struct {
		Introduced string `json:"introduced"`
		Fixed      string `json:"fixed"`
	} `json:"events"`
}

// The index rows, field for field as the v1 schema names them.
type (
	dbMeta struct {
		Modified string `json:"modified"`
	}
	moduleVuln struct {
		ID       string `json:"id"`
		Modified string `json:"modified"`
		Fixed    string `json:"fixed,omitempty"`
	}
	module struct {
		Path  string       `json:"path"`
		Vulns []moduleVuln `json:"vulns"`
	}
	vuln struct {
		ID       string   `json:"id"`
		Modified string   `json:"modified"`
		Aliases  []string `json:"aliases,omitempty"`
	}
)

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// build reads every *.json entry under dir (index.json, the legacy index,
// excepted) and writes the database to out. It returns the entry count.
func build(dir, out string) (int, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return 0, err
	}
	slices.Sort(files)
	if err := os.MkdirAll(filepath.Join(out, "index"), 0o755); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Join(out, "ID"), 0o755); err != nil {
		return 0, err
	}
	var latest time.Time
	modules := map[string]*module{}
	var vulns []vuln
	seen := map[string]bool{}
	for _, f := range files {
		if filepath.Base(f) == "index.json" {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		var e entry
		if err := json.Unmarshal(raw, &e); err != nil {
			return 0, fmt.Errorf("%s: %w", f, err)
		}
		if e.ID == "" || filepath.Base(f) != e.ID+".json" {
			return 0, fmt.Errorf("%s: the file must be named after its id (%q)", f, e.ID)
		}
		if seen[e.ID] {
			return 0, fmt.Errorf("id %s appears twice", e.ID)
		}
		seen[e.ID] = true
		if e.Modified.After(latest) {
			latest = e.Modified
		}
		vulns = append(vulns, vuln{ID: e.ID, Modified: stamp(e.Modified), Aliases: e.Aliases})
		for _, a := range e.Affected {
			m := modules[a.Package.Name]
			if m == nil {
				m = &module{Path: a.Package.Name, Vulns: []moduleVuln{}}
				modules[a.Package.Name] = m
			}
			m.Vulns = append(m.Vulns, moduleVuln{ID: e.ID, Modified: stamp(e.Modified), Fixed: latestFixed(a.Ranges)})
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			return 0, fmt.Errorf("%s: %w", f, err)
		}
		if err := os.WriteFile(filepath.Join(out, "ID", e.ID+".json"), compact.Bytes(), 0o644); err != nil {
			return 0, err
		}
	}
	mods := make([]*module, 0, len(modules))
	for _, m := range modules {
		slices.SortStableFunc(m.Vulns, func(a, b moduleVuln) int { return strings.Compare(a.ID, b.ID) })
		mods = append(mods, m)
	}
	slices.SortFunc(mods, func(a, b *module) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(vulns, func(a, b vuln) int { return strings.Compare(a.ID, b.ID) })
	// modules.json last: govulncheck takes a directory with it for a
	// complete database, so an interrupted build is not mistaken for one.
	for _, w := range []struct {
		name string
		v    any
	}{{"db.json", dbMeta{Modified: stamp(latest)}}, {"vulns.json", vulns}, {"modules.json", mods}} {
		b, err := json.Marshal(w.v)
		if err != nil {
			return 0, err
		}
		if err := os.WriteFile(filepath.Join(out, "index", w.name), b, 0o644); err != nil {
			return 0, err
		}
	}
	return len(vulns), nil
}

// latestFixed is the version after which no version is affected, or "" when
// there is none (a range reintroduced after its last fix, or never fixed):
// the rule of the vulndb module's osvutils.LatestFixed. govulncheck skips a
// module at or above it without reading the entry, so it must never be too
// low.
func latestFixed(ranges []osvRange) string {
	latest := ""
	for _, r := range ranges {
		if r.Type != "SEMVER" {
			continue
		}
		for _, e := range r.Events {
			if e.Fixed != "" && compareSemver(latest, e.Fixed) < 0 {
				latest = e.Fixed
			}
		}
		for _, e := range r.Events {
			if e.Introduced != "" && e.Introduced != "0" && compareSemver(latest, e.Introduced) < 0 {
				latest = ""
				break
			}
		}
	}
	return latest
}

// semver is a parsed unprefixed semantic version ("1.2.3-rc.1+meta").
type semver struct {
	num [3]string // major, minor, patch: decimal, no leading zero
	pre []string  // prerelease identifiers
}

// parseSemver parses an unprefixed semantic version; ok is false for
// anything else.
func parseSemver(v string) (s semver, ok bool) {
	if i := strings.IndexByte(v, '+'); i >= 0 {
		if !validIdents(v[i+1:], false) {
			return s, false
		}
		v = v[:i]
	}
	if i := strings.IndexByte(v, '-'); i >= 0 {
		if !validIdents(v[i+1:], true) {
			return s, false
		}
		s.pre = strings.Split(v[i+1:], ".")
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return s, false
	}
	for i, p := range parts {
		if !isNum(p) || (len(p) > 1 && p[0] == '0') {
			return s, false
		}
		s.num[i] = p
	}
	return s, true
}

// validIdents checks dot-separated identifiers: [0-9A-Za-z-]+, and for a
// prerelease no numeric identifier with a leading zero.
func validIdents(s string, pre bool) bool {
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return false
		}
		for _, c := range id {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
				return false
			}
		}
		if pre && isNum(id) && len(id) > 1 && id[0] == '0' {
			return false
		}
	}
	return true
}

func isNum(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// compareNum compares decimal strings without leading zeros.
func compareNum(a, b string) int {
	return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
}

// compareSemver orders unprefixed versions by semver precedence, an invalid
// version ("" included) before every valid one, as golang.org/x/mod/semver
// does with the "v" added.
func compareSemver(a, b string) int {
	sa, oka := parseSemver(a)
	sb, okb := parseSemver(b)
	switch {
	case !oka && !okb:
		return 0
	case !oka:
		return -1
	case !okb:
		return 1
	}
	for i := range sa.num {
		if c := compareNum(sa.num[i], sb.num[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(sa.pre) == 0 && len(sb.pre) == 0:
		return 0
	case len(sa.pre) == 0:
		return 1 // a release follows its prereleases
	case len(sb.pre) == 0:
		return -1
	}
	for i := 0; i < len(sa.pre) && i < len(sb.pre); i++ {
		x, y := sa.pre[i], sb.pre[i]
		nx, ny := isNum(x), isNum(y)
		var c int
		switch {
		case nx && ny:
			c = compareNum(x, y)
		case nx:
			c = -1 // numeric identifiers sort before alphanumeric ones
		case ny:
			c = 1
		default:
			c = strings.Compare(x, y)
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(len(sa.pre), len(sb.pre))
}
