package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestCompareSemver(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"1.2.3", "1.2.3", 0},
		{"1.2.3", "1.2.4", -1},
		{"1.10.0", "1.9.0", 1}, // numeric, not lexical
		{"0.43.0", "0.9.1", 1},
		{"1.0.0-rc.1", "1.0.0", -1}, // a prerelease precedes its release
		{"1.0.0-alpha", "1.0.0-alpha.1", -1},
		{"1.0.0-alpha.1", "1.0.0-alpha.beta", -1}, // numeric identifiers first
		{"1.0.0-beta.2", "1.0.0-beta.11", -1},
		{"1.0.0+build.5", "1.0.0", 0}, // build metadata has no precedence
		{"1.11.0-alpha.0.0.20260225185322-738bad662b20", "1.11.0", -1},
		{"", "0.0.1", -1}, // invalid before valid, as x/mod/semver
		{"1.2", "0.0.1", -1},
		{"01.2.3", "0.0.1", -1},
		{"", "x", 0},
	}
	for _, c := range cases {
		if got := compareSemver(c.a, c.b); got != c.want {
			t.Errorf("compareSemver(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := compareSemver(c.b, c.a); got != -c.want {
			t.Errorf("compareSemver(%q, %q) = %d, want %d", c.b, c.a, got, -c.want)
		}
	}
}

// osvEntry writes one OSV entry as the vulndb module holds it.
func osvEntry(t *testing.T, dir, id, module string, events ...map[string]string) {
	t.Helper()
	e := map[string]any{
		"schema_version": "1.3.1", "id": id, "modified": "2024-01-02T03:04:05Z",
		"aliases": []string{"CVE-" + id},
		"affected": []any{map[string]any{
			"package": map[string]string{"name": module, "ecosystem": "Go"},
			"ranges":  []any{map[string]any{"type": "SEMVER", "events": events}},
		}},
	}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, id+".json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestBuildWritesTheV1Layout(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	// Fixed twice: the later fix is the one; a lexical compare would pick 0.9.0.
	osvEntry(t, in, "GO-2024-0002", "example.com/m", map[string]string{"introduced": "0"}, map[string]string{"fixed": "0.9.0"},
		map[string]string{"introduced": "0.10.0"}, map[string]string{"fixed": "0.12.0"})
	// Reintroduced after its last fix: no version is known safe.
	osvEntry(t, in, "GO-2024-0001", "example.com/m", map[string]string{"introduced": "0"}, map[string]string{"fixed": "1.0.0"},
		map[string]string{"introduced": "2.0.0"})
	if n, err := build(in, out); err != nil || n != 2 {
		t.Fatalf("build: %d entries, %v", n, err)
	}
	want := map[string]string{
		"index/db.json":      `{"modified":"2024-01-02T03:04:05Z"}`,
		"index/vulns.json":   `[{"id":"GO-2024-0001","modified":"2024-01-02T03:04:05Z","aliases":["CVE-GO-2024-0001"]},{"id":"GO-2024-0002","modified":"2024-01-02T03:04:05Z","aliases":["CVE-GO-2024-0002"]}]`,
		"index/modules.json": `[{"path":"example.com/m","vulns":[{"id":"GO-2024-0001","modified":"2024-01-02T03:04:05Z"},{"id":"GO-2024-0002","modified":"2024-01-02T03:04:05Z","fixed":"0.12.0"}]}]`,
	}
	for name, w := range want {
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != w {
			t.Errorf("%s:\n got %s\nwant %s", name, got, w)
		}
	}
	var e map[string]any
	b, err := os.ReadFile(filepath.Join(out, "ID", "GO-2024-0002.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &e); err != nil || e["id"] != "GO-2024-0002" {
		t.Errorf("ID/GO-2024-0002.json: %s (%v)", b, err)
	}
}

func TestBuildRefusesAMisnamedEntry(t *testing.T) {
	in := t.TempDir()
	osvEntry(t, in, "GO-2024-0001", "example.com/m")
	if err := os.Rename(filepath.Join(in, "GO-2024-0001.json"), filepath.Join(in, "GO-2024-0009.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := build(in, t.TempDir()); err == nil {
		t.Error("an entry whose file is not named after its id was accepted")
	}
}
