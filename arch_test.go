package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
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

// ARCHITECTURE.md names code in backticks. Every such mention outside a
// fenced block (the diagrams) that has one of these two shapes must exist in
// the tree as it is when the test runs:
//
//   - a path: letters, digits, '_', '-', '.' in '/'-separated parts, with a
//     '/' in it or ending in ".go" (`sessions/claude`, `supervisor/loop.go`,
//     `terminal/infer.go`, `agents.go`, `localeenv/`). It must be a file or
//     directory of this module whose path is the mention or ends in
//     "/"+mention, or a standard-library package (`testing/synctest`).
//   - a package-qualified name: a lower-case identifier, a dot, an exported
//     identifier, nothing else (`sessions.Apply`, `core.Reconcile`). Some
//     package of this module whose directory is named like the qualifier must
//     declare that name at top level in a non-test file.
//
// Everything else is not checked: a span with a space (commands), a
// lower-case name after the dot (settings keys such as
// `supervisor.tick_seconds`, JSON fields), `Type.Field`, calls with
// parentheses, quotes, placeholders such as <id>, absolute paths (/proc,
// /v1/health), and bare identifiers.

type mention struct {
	Line int
	Kind string // mentionPath or mentionName
	Text string
}

const (
	mentionPath = "path"
	mentionName = "name"
)

var (
	mentionPathRE = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9_.-]*(/[A-Za-z0-9_.-]+)*/?$`)
	mentionNameRE = regexp.MustCompile(`^[a-z][a-z0-9]*\.[A-Z][A-Za-z0-9_]*$`)
)

// mentionKind says which rule a backticked span falls under ("" for none).
func mentionKind(s string) string {
	switch {
	case mentionNameRE.MatchString(s):
		return mentionName
	case mentionPathRE.MatchString(s) && (strings.Contains(s, "/") || strings.HasSuffix(s, ".go")):
		return mentionPath
	}
	return ""
}

// docMentions returns the checked mentions of a Markdown text, in order, with
// their line numbers. Fenced blocks are skipped; a span may run across a line
// break, as Markdown allows.
func docMentions(doc string) []mention {
	var out []mention
	inFence := false
	var para []string // lines of the current run outside fences
	start := 0        // line number of para[0]
	flush := func() {
		text := strings.Join(para, "\n")
		for {
			i := strings.IndexByte(text, '`')
			if i < 0 {
				break
			}
			j := strings.IndexByte(text[i+1:], '`')
			if j < 0 {
				break
			}
			span := text[i+1 : i+1+j]
			line := start + strings.Count(text[:i], "\n")
			if k := mentionKind(strings.TrimSpace(span)); k != "" {
				out = append(out, mention{Line: line, Kind: k, Text: strings.TrimSpace(span)})
			}
			consumed := i + 1 + j + 1
			start += strings.Count(text[:consumed], "\n")
			text = text[consumed:]
		}
		para = nil
	}
	for n, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			flush()
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if para == nil {
			start = n + 1
		}
		para = append(para, line)
	}
	flush()
	return out
}

func TestArchMentionsExtractor(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		want []mention
	}{
		{"package path", "the `sessions/claude` adapter", []mention{{1, mentionPath, "sessions/claude"}}},
		{"file path", "see `supervisor/loop.go`.", []mention{{1, mentionPath, "supervisor/loop.go"}}},
		{"relative file", "(`terminal/infer.go`, first match)", []mention{{1, mentionPath, "terminal/infer.go"}}},
		{"bare go file", "the registry (`agents.go`)", []mention{{1, mentionPath, "agents.go"}}},
		{"directory with slash", "see `localeenv/`", []mention{{1, mentionPath, "localeenv/"}}},
		{"package name", "`sessions.Apply` and `core.Reconcile`", []mention{{1, mentionName, "sessions.Apply"}, {1, mentionName, "core.Reconcile"}}},
		{"settings key", "every `supervisor.tick_seconds`", nil},
		{"command", "`hooks install` and `make test`", nil},
		{"type and field", "`Runtime.mu` and `Probe.Unreachable`", nil},
		{"call", "in `t.TempDir()`", nil},
		{"absolute and placeholder", "`/proc`, `/v1/health`, `session-state/<id>/`, `inuse.<pid>.hold`", nil},
		{"json", "`\"priority\":\"now\"` and `.key`", nil},
		{"bare identifier", "`ExternalSource` and `Tailer`", nil},
		{"fenced block skipped", "```\n`sessions/nowhere`\n```\nthen `watch`/`sessions/x`", []mention{{4, mentionPath, "sessions/x"}}},
		{"line numbers", "a\n\nb `x/y.go`\nc `p.Q`", []mention{{3, mentionPath, "x/y.go"}, {4, mentionName, "p.Q"}}},
		{"span across a line break", "one `sessions/\nclaude` two `a/b`", []mention{{2, mentionPath, "a/b"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := docMentions(tc.doc); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// moduleTree lists the module's files and directories (slash-separated,
// relative to root), leaving out hidden directories and build output.
func moduleTree(root string) ([]string, error) {
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			switch name := d.Name(); {
			case strings.HasPrefix(name, "."), name == "node_modules", rel == "bin", rel == "dist":
				return filepath.SkipDir
			}
		}
		paths = append(paths, filepath.ToSlash(rel))
		return nil
	})
	return paths, err
}

// exportedNames parses the non-test Go files of every directory whose name is
// one of pkgs and returns, per directory name, the exported top-level names
// declared there (functions, types, variables, constants; not methods).
func exportedNames(root string, tree []string, pkgs map[string]bool) (map[string]map[string]bool, error) {
	out := map[string]map[string]bool{}
	fset := token.NewFileSet()
	for _, p := range tree {
		dir, file := path.Split(p)
		dir = strings.TrimSuffix(dir, "/")
		if dir == "" || !pkgs[path.Base(dir)] || !strings.HasSuffix(file, ".go") || strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(p)), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		names := out[path.Base(dir)]
		if names == nil {
			names = map[string]bool{}
			out[path.Base(dir)] = names
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					names[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names[s.Name.Name] = true
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names[n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	return out, nil
}

// staleMentions checks mentions against the module at root and says, for
// each one that does not exist, what to fix.
func staleMentions(root, docName string, ms []mention) ([]string, error) {
	tree, err := moduleTree(root)
	if err != nil {
		return nil, err
	}
	pkgs := map[string]bool{}
	for _, m := range ms {
		if m.Kind == mentionName {
			pkg, _, _ := strings.Cut(m.Text, ".")
			pkgs[pkg] = true
		}
	}
	names, err := exportedNames(root, tree, pkgs)
	if err != nil {
		return nil, err
	}
	goroot := build.Default.GOROOT
	var out []string
	for _, m := range ms {
		switch m.Kind {
		case mentionPath:
			want := strings.TrimSuffix(m.Text, "/")
			found := slices.ContainsFunc(tree, func(p string) bool { return p == want || strings.HasSuffix(p, "/"+want) })
			if !found && goroot != "" {
				if fi, err := os.Stat(filepath.Join(goroot, "src", filepath.FromSlash(want))); err == nil && fi.IsDir() {
					found = true // a standard-library package
				}
			}
			if !found {
				out = append(out, fmt.Sprintf("%s:%d: `%s` is no file or directory of this module (moved or renamed? update the mention)", docName, m.Line, m.Text))
			}
		case mentionName:
			pkg, name, _ := strings.Cut(m.Text, ".")
			switch declared, ok := names[pkg]; {
			case !ok:
				out = append(out, fmt.Sprintf("%s:%d: `%s`: this module has no package %q (moved or renamed? update the mention)", docName, m.Line, m.Text, pkg))
			case !declared[name]:
				out = append(out, fmt.Sprintf("%s:%d: `%s`: no package %q of this module declares %s (renamed or removed? update the mention)", docName, m.Line, m.Text, pkg, name))
			}
		}
	}
	return out, nil
}

func TestArchStaleMentionsNameWhatToFix(t *testing.T) {
	root := t.TempDir()
	for p, src := range map[string]string{
		"sessions/apply.go":            "package sessions\n\nfunc Apply() {}\n\ntype Event struct{}\n\nfunc (Event) Method() {}\n",
		"sessions/apply_test.go":       "package sessions\n\nfunc TestOnly() {}\n",
		"supervisor/core/reconcile.go": "package core\n\nconst Policy = 1\n\nvar Reconcile, other = 1, 2\n",
	} {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		text  string
		stale bool
	}{
		{"sessions", false},
		{"sessions/apply.go", false},
		{"core/reconcile.go", false}, // resolved by suffix
		{"supervisor/core/", false},
		{"testing/synctest", false}, // the standard library
		{"sessions/claude", true},
		{"ore/reconcile.go", true}, // a suffix match is on whole path parts
		{"sessions.Apply", false},
		{"sessions.Event", false},
		{"core.Reconcile", false},
		{"core.Policy", false},
		{"sessions.Method", true},   // a method is not a package-level name
		{"sessions.TestOnly", true}, // test files do not count
		{"sessions.Gone", true},
		{"moved.Apply", true},
	}
	for _, tc := range cases {
		kind := mentionKind(tc.text)
		if tc.text == "sessions" {
			kind = mentionPath // a bare directory name is not extracted, but resolves
		}
		got, err := staleMentions(root, "DOC.md", []mention{{1, kind, tc.text}})
		if err != nil {
			t.Fatal(err)
		}
		if (len(got) > 0) != tc.stale {
			t.Errorf("%s: got %v, stale want %v", tc.text, got, tc.stale)
		}
	}
}

// TestArchitectureMentionsExist checks every package, file and exported name
// ARCHITECTURE.md mentions against the tree as it is now.
func TestArchitectureMentionsExist(t *testing.T) {
	begin := time.Now()
	doc, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	ms := docMentions(string(doc))
	if len(ms) < 20 {
		t.Fatalf("found only %d checked mentions in ARCHITECTURE.md; is the extractor broken?", len(ms))
	}
	stale, err := staleMentions(".", "ARCHITECTURE.md", ms)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stale {
		t.Error(s)
	}
	t.Logf("%d mentions checked in %v", len(ms), time.Since(begin))
}
