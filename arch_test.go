package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/session-supervisor/session-supervisor"

// pkgInfo is what the import rules need from `go list`.
type pkgInfo struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Standard   bool
}

// importViolations applies ARCHITECTURE.md's import rules to a package graph:
// sessions (and its adapters) depend on the standard library and sessions
// only; nothing but main imports app or tray; the core never pulls in fyne.
func importViolations(pkgs []pkgInfo, standard map[string]bool) []string {
	var out []string
	isOwn := func(p string) bool { return p == module || strings.HasPrefix(p, module+"/") }
	under := func(p, dir string) bool { return p == module+"/"+dir || strings.HasPrefix(p, module+"/"+dir+"/") }
	for _, p := range pkgs {
		if !isOwn(p.ImportPath) {
			continue
		}
		if under(p.ImportPath, "sessions") {
			for _, d := range p.Deps {
				if !standard[d] && !under(d, "sessions") {
					out = append(out, fmt.Sprintf("%s depends on %s (sessions must use the standard library only)", p.ImportPath, d))
				}
			}
		}
		for _, imp := range p.Imports {
			for _, ui := range []string{"app", "tray"} {
				if under(imp, ui) && p.ImportPath != module {
					out = append(out, fmt.Sprintf("%s imports %s (only main may import %s)", p.ImportPath, imp, ui))
				}
			}
		}
		for _, core := range []string{"sessions", "supervisor", "storage"} {
			if !under(p.ImportPath, core) {
				continue
			}
			for _, d := range p.Deps {
				if strings.HasPrefix(d, "fyne.io/") || strings.HasPrefix(d, "github.com/gen2brain/beeep") {
					out = append(out, fmt.Sprintf("%s depends on %s (UI and notification libraries stay out of the core)", p.ImportPath, d))
				}
			}
		}
	}
	return out
}

func TestImportViolationsCatchesForbiddenEdges(t *testing.T) {
	std := map[string]bool{"fmt": true, "time": true}
	cases := []struct {
		name string
		pkgs []pkgInfo
		want int
	}{
		{"clean", []pkgInfo{{ImportPath: module + "/sessions", Deps: []string{"fmt", "time"}}}, 0},
		{"sessions imports sqlite", []pkgInfo{{ImportPath: module + "/sessions", Deps: []string{"fmt", "modernc.org/sqlite"}}}, 1},
		{"adapter imports sessions", []pkgInfo{{ImportPath: module + "/sessions/claude", Deps: []string{"fmt", module + "/sessions"}}}, 0},
		{"adapter imports storage", []pkgInfo{{ImportPath: module + "/sessions/claude", Deps: []string{module + "/storage"}}}, 1},
		{"tray imports app", []pkgInfo{{ImportPath: module + "/tray", Imports: []string{module + "/app"}}}, 1},
		{"main imports app", []pkgInfo{{ImportPath: module, Imports: []string{module + "/app", module + "/tray"}}}, 0},
		{"supervisor pulls fyne", []pkgInfo{{ImportPath: module + "/supervisor", Deps: []string{"fyne.io/fyne/v2"}}}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := importViolations(tc.pkgs, std); len(got) != tc.want {
				t.Fatalf("got %d violations %v, want %d", len(got), got, tc.want)
			}
		})
	}
}

// TestImportRules runs the rules over the real module graph.
func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,Deps,Standard", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []pkgInfo
	std := map[string]bool{}
	for dec.More() {
		var p pkgInfo
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		if p.Standard {
			std[p.ImportPath] = true
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 3 {
		t.Fatalf("go list returned only %d packages", len(pkgs))
	}
	for _, v := range importViolations(pkgs, std) {
		t.Error(v)
	}
}

// importTable reads the package table of ARCHITECTURE.md (between the
// imports:begin and imports:end markers): for each package of this module,
// the packages of this module it may import; nil means "everything".
func importTable(doc string) (map[string][]string, error) {
	begin, end := strings.Index(doc, "<!-- imports:begin -->"), strings.Index(doc, "<!-- imports:end -->")
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("no imports:begin/imports:end markers")
	}
	table := map[string][]string{}
	for _, line := range strings.Split(doc[begin:end], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue // the header, its rule, blank lines
		}
		// The package name is the first `code` of the cell ("`.` (main)").
		_, name, _ := strings.Cut(cells[1], "`")
		name, _, _ = strings.Cut(name, "`")
		pkg := module
		if name != "." {
			pkg = module + "/" + name
		}
		allowed := strings.TrimSpace(cells[3])
		switch allowed {
		case "everything":
			table[pkg] = nil
			continue
		case "—", "-", "":
			table[pkg] = []string{}
			continue
		}
		list := []string{}
		for _, a := range strings.Split(allowed, ",") {
			list = append(list, module+"/"+strings.Trim(strings.TrimSpace(a), "`"))
		}
		table[pkg] = list
	}
	if len(table) == 0 {
		return nil, fmt.Errorf("the table between the markers has no rows")
	}
	return table, nil
}

// tableViolations checks every package of this module against the table:
// it must have a row, and import only what its row lists.
func tableViolations(pkgs []pkgInfo, table map[string][]string) []string {
	var out []string
	for _, p := range pkgs {
		if p.ImportPath != module && !strings.HasPrefix(p.ImportPath, module+"/") {
			continue
		}
		allowed, ok := table[p.ImportPath]
		if !ok {
			out = append(out, fmt.Sprintf("%s is not in ARCHITECTURE.md's package table", p.ImportPath))
			continue
		}
		if allowed == nil {
			continue
		}
		for _, imp := range p.Imports {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if !slices.Contains(allowed, imp) {
				out = append(out, fmt.Sprintf("%s imports %s, which ARCHITECTURE.md's table does not allow", p.ImportPath, imp))
			}
		}
	}
	return out
}

func TestTableViolationsCatchesForbiddenEdges(t *testing.T) {
	doc := "x\n<!-- imports:begin -->\n| package | owns | may import |\n|---|---|---|\n" +
		"| `.` (main) | root | everything |\n| `sessions` | core | — |\n| `tray` | menu | `sessions`, `ui/model` |\n<!-- imports:end -->\n"
	table, err := importTable(doc)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		pkg  pkgInfo
		want int
	}{
		{"main imports anything", pkgInfo{ImportPath: module, Imports: []string{module + "/tray", module + "/storage"}}, 0},
		{"tray within its row", pkgInfo{ImportPath: module + "/tray", Imports: []string{module + "/sessions", "fmt"}}, 0},
		{"tray imports storage", pkgInfo{ImportPath: module + "/tray", Imports: []string{module + "/storage"}}, 1},
		{"sessions imports tray", pkgInfo{ImportPath: module + "/sessions", Imports: []string{module + "/tray"}}, 1},
		{"a package missing from the table", pkgInfo{ImportPath: module + "/newpkg"}, 1},
	}
	for _, tc := range cases {
		if got := tableViolations([]pkgInfo{tc.pkg}, table); len(got) != tc.want {
			t.Errorf("%s: %d violations %v, want %d", tc.name, len(got), got, tc.want)
		}
	}
}

// TestArchitectureTable checks the real module against the table the
// project's ARCHITECTURE.md states.
func TestArchitectureTable(t *testing.T) {
	doc, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	table, err := importTable(string(doc))
	if err != nil {
		t.Fatalf("ARCHITECTURE.md: %v", err)
	}
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []pkgInfo
	for dec.More() {
		var p pkgInfo
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	for _, v := range tableViolations(pkgs, table) {
		t.Error(v)
	}
}
