// Package fyneoverlay is our build-time patch of Fyne: copies of upstream
// files, changed, that `go build -overlay` compiles in place of Fyne's own
// (the module cache stays untouched). Every build of the app uses it (the
// Makefile's builds through cmd/fyne-overlay, the end-to-end suite's
// through Write); a build without it compiles and runs as upstream does.
//
// The patched copies live under _fyne/, at their path inside Fyne's module
// (the leading underscore keeps the go command from compiling them as a
// package of ours); each one's header says what differs from upstream and
// why. Today there are two: internal/driver/glfw/loop.go, whose event loop
// sleeps while the window is idle instead of ticking 60 times a second,
// and internal/painter/font.go, which loads the system's font for the
// locale only when a character the bundled fonts lack is drawn.
//
// Write refuses a Fyne whose files are not the ones the copies were made
// from: after a bump of go.mod's Fyne, redo each patch on the new upstream
// file and record its version and hash here.
package fyneoverlay

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
)

// Module is the patched module.
const Module = "fyne.io/fyne/v2"

// Version is the upstream release the patched copies were made from.
const Version = "v2.7.1"

// Patch is one patched file.
type Patch struct {
	// Path is the file's path inside Fyne's module, and under _fyne/.
	Path string
	// UpstreamSHA256 is the hash of the upstream file at Version.
	UpstreamSHA256 string
}

// Patches are the patched files.
var Patches = []Patch{
	{Path: "internal/driver/glfw/loop.go", UpstreamSHA256: "d15914b9536c96cfdb7627b6b78b7ca3ad31b56428b2061f8421e93bbe859e45"},
	{Path: "internal/painter/font.go", UpstreamSHA256: "7cfee822db37023e1a0d73b20acc34306318a6327d1c99377f6849d65fa3ca73"},
}

// Dir is where the patched copies are, relative to the repository's root.
const Dir = "packaging/fyneoverlay/_fyne"

// overlay is the JSON `go build -overlay` reads.
type overlay struct {
	Replace map[string]string
}

// ModuleDir asks the go command, in the repository root, which Fyne go.mod
// selects and where its files are (downloading it if it is not yet).
func ModuleDir(root string) (version, dir string, err error) {
	cmd := exec.Command("go", "mod", "download", "-json", Module)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("go mod download %s: %w: %s", Module, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var m struct{ Version, Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", "", fmt.Errorf("reading go mod download's answer for %s: %w", Module, err)
	}
	if m.Error != "" || m.Dir == "" {
		return "", "", fmt.Errorf("go mod download %s: no directory (%s)", Module, m.Error)
	}
	return m.Version, m.Dir, nil
}

// Check fails when the version or an upstream file is not the one the
// copies were made from.
func Check(version, moduleDir string) error {
	if version != Version {
		return fmt.Errorf("%s is %s but the patches in %s are for %s: redo them on the new upstream files (see packaging/fyneoverlay)", Module, version, Dir, Version)
	}
	for _, p := range Patches {
		b, err := os.ReadFile(filepath.Join(moduleDir, filepath.FromSlash(p.Path)))
		if err != nil {
			return fmt.Errorf("reading upstream %s: %w", p.Path, err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != p.UpstreamSHA256 {
			return fmt.Errorf("upstream %s in %s is not the file its patch was made from (sha256 %x, want %s)", p.Path, moduleDir, sum, p.UpstreamSHA256)
		}
	}
	return nil
}

// Write prepares the overlay in dir and returns the path of its JSON, for
// `go build -overlay`. The go command refuses to overlay a file in the
// module cache, so Fyne is compiled from a copy of its module outside it
// (ShadowDir, made once per version) that the overlay's go.mod (the
// repository's go.mod plus a replace directive, in dir) selects, and the
// overlay replaces the copy's patched files with ours. Everything is
// written aside and renamed into place, so two builds writing at once both
// see whole files.
func Write(root, dir string) (string, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("writing the Fyne overlay: %w", err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", fmt.Errorf("writing the Fyne overlay: %w", err)
	}
	version, moduleDir, err := ModuleDir(root)
	if err != nil {
		return "", err
	}
	if err := Check(version, moduleDir); err != nil {
		return "", err
	}
	shadow := ShadowDir(root, version)
	for _, d := range []string{dir, filepath.Dir(shadow)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", fmt.Errorf("writing the Fyne overlay: %w", err)
		}
	}
	if err := copyModule(moduleDir, shadow); err != nil {
		return "", err
	}

	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("writing the Fyne overlay: %w", err)
	}
	if bytes.Contains(gomod, []byte("replace "+Module)) {
		return "", fmt.Errorf("go.mod already replaces %s: the Fyne overlay would replace it again", Module)
	}
	gomod = fmt.Appendf(gomod, "\n// Added by packaging/fyneoverlay: Fyne from a copy outside the module cache.\nreplace %s %s => %s\n", Module, version, shadow)
	modFile := filepath.Join(dir, "go.mod")
	if err := writeAside(modFile, gomod); err != nil {
		return "", err
	}

	o := overlay{Replace: map[string]string{filepath.Join(root, "go.mod"): modFile}}
	for _, p := range Patches {
		patched := filepath.Join(root, filepath.FromSlash(Dir), filepath.FromSlash(p.Path))
		if _, err := os.Stat(patched); err != nil {
			return "", fmt.Errorf("the patched %s: %w", p.Path, err)
		}
		o.Replace[filepath.Join(shadow, filepath.FromSlash(p.Path))] = patched
	}
	b, err := json.MarshalIndent(o, "", "\t")
	if err != nil {
		return "", fmt.Errorf("writing the Fyne overlay: %w", err)
	}
	out := filepath.Join(dir, "overlay.json")
	return out, writeAside(out, append(b, '\n'))
}

// ShadowDir is where Write copies Fyne at version: in the repository's
// git-ignored cache, which the lint's gofmt pass leaves out.
func ShadowDir(root, version string) string {
	return filepath.Join(root, ".cache", "fyne-overlay", "fyne-"+version)
}

// copyModule copies the module in src to dst unless dst exists (a copy is
// renamed into place only once whole). The copy's files are read-only, as
// the module cache's are: nothing is meant to edit them.
func copyModule(src, dst string) error {
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), filepath.Base(dst)+".tmp")
	if err != nil {
		return fmt.Errorf("copying %s: %w", Module, err)
	}
	defer os.RemoveAll(tmp) // gone after the rename; what is left of a failed copy
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(tmp, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o444)
	})
	if err != nil {
		return fmt.Errorf("copying %s to %s: %w", Module, dst, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("copying %s: %w", Module, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		if _, statErr := os.Stat(dst); statErr == nil {
			return nil // another build copied it meanwhile
		}
		return fmt.Errorf("copying %s to %s: %w", Module, dst, err)
	}
	return nil
}

// writeAside writes b to name through a file beside it renamed into place.
func writeAside(name string, b []byte) error {
	tmp := fmt.Sprintf("%s.%d", name, os.Getpid())
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}
