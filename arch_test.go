package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
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
