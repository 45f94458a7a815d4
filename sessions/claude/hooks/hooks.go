// Package hooks adds, upgrades and removes the app's entries in Claude
// Code's settings.json: observational hooks (session start and end, a
// prompt sent, a notification, a turn's end or failure, compaction) that
// forward each event to the app. It edits the user's file as text, so
// everything that is not ours stays byte for byte.
package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Sentinel is the hook program's name. An entry is ours when its command is
// exactly one Command writes, this program and its socket (isOurCommand):
// that is how install finds an older entry to upgrade and uninstall finds
// exactly ours, without a marker field of our own, and never a command of
// the user's that merely mentions the program.
const Sentinel = "session-supervisor-hook"

// Events are the observational events we register. None can decide
// anything: no PermissionRequest or PreToolUse (a hook there could deny
// when the app is down), and no tool events (one spawn per tool call for
// evidence the transcript already carries).
var Events = []string{
	"SessionStart", "UserPromptSubmit", "Notification", "Stop", "StopFailure",
	"PreCompact", "PostCompact", "SessionEnd",
}

// Timeout is the entries' timeout in seconds, a backstop: the hook itself
// gives up after a fraction of a second.
const Timeout = 5

// ErrInvalid: the settings file is not valid JSON (or not an object); it
// is left untouched.
var ErrInvalid = errors.New("not a valid settings file")

// SettingsPath is Claude's user settings file: $CLAUDE_CONFIG_DIR/settings.json,
// else ~/.claude/settings.json.
func SettingsPath() (string, error) {
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return filepath.Join(d, "settings.json"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding Claude's settings: %w", err)
	}
	return filepath.Join(home, ".claude", "settings.json"), nil
}

// Command is the shell command of our entry: the hook program, given the
// socket it forwards to. Both paths are single-quoted for the shell the CLI
// runs command hooks through.
func Command(hookBin, socket string) string {
	return shellQuote(hookBin) + " --socket " + shellQuote(socket)
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// entry is the text of our hook object. async: the CLI does not wait for
// it, so the turn never waits for the app.
func entry(command string) string {
	c, _ := json.Marshal(command)
	return fmt.Sprintf(`{"type": "command", "command": %s, "async": true, "timeout": %d}`, c, Timeout)
}

func group(command string) string {
	return `{"hooks": [` + entry(command) + `]}`
}

// oursIn yields every hook object of ours in an event's array, with the
// index of its matcher group and its index in that group's hooks array.
func oursIn(arr *node) iter.Seq2[[2]int, *node] {
	return func(yield func([2]int, *node) bool) {
		if arr == nil || arr.kind != kArray {
			return
		}
		for gi, g := range arr.elems {
			_, hs := g.get("hooks")
			if hs == nil || hs.kind != kArray {
				continue
			}
			for hi, h := range hs.elems {
				if isOurs(h) && !yield([2]int{gi, hi}, h) {
					return
				}
			}
		}
	}
}

// ours locates the first hook object of ours under hooks[event].
func ours(hooks *node, event string) (gi, hi int, ok bool) {
	_, arr := hooks.get(event)
	for at := range oursIn(arr) {
		return at[0], at[1], true
	}
	return 0, 0, false
}

func isOurs(h *node) bool {
	_, v := h.get("command")
	return v != nil && v.kind == kString && isOurCommand(v.str)
}

// isOurCommand reports whether c is exactly what Command writes for some
// hook program named Sentinel and some socket: nothing before, between or
// after, each path quoted as shellQuote quotes it.
func isOurCommand(c string) bool {
	bin, rest, ok := cutQuoted(c)
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, " --socket ")
	if !ok {
		return false
	}
	socket, rest, ok := cutQuoted(rest)
	if !ok || rest != "" || socket == "" {
		return false
	}
	base := bin[strings.LastIndexAny(bin, `/\`)+1:]
	return (base == Sentinel || base == Sentinel+".exe") && Command(bin, socket) == c
}

// cutQuoted reads one word as shellQuote writes it ('…', with '\” for a
// quote) from the start of s and returns it unquoted, with what follows.
func cutQuoted(s string) (word, rest string, ok bool) {
	var b strings.Builder
	for {
		if !strings.HasPrefix(s, "'") {
			return "", "", false
		}
		end := strings.IndexByte(s[1:], '\'')
		if end < 0 {
			return "", "", false
		}
		b.WriteString(s[1 : 1+end])
		s = s[2+end:]
		next, isQuote := strings.CutPrefix(s, `\''`)
		if !isQuote {
			return b.String(), s, true
		}
		b.WriteByte('\'')
		s = "'" + next
	}
}

// doc is a parsed settings file.
type doc struct {
	src []byte
	top *node
}

func load(src []byte) (*doc, error) {
	top, err := parse(src)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if top.kind != kObject {
		return nil, fmt.Errorf("%w: the top level is not an object", ErrInvalid)
	}
	if _, h := top.get("hooks"); h != nil && h.kind != kObject {
		return nil, fmt.Errorf("%w: \"hooks\" is not an object", ErrInvalid)
	}
	return &doc{src: src, top: top}, nil
}

// set replaces the source and re-locates it (edits are few and files small).
func (d *doc) set(src []byte) {
	d.src = src
	d.top, _ = parse(src)
}

func (d *doc) hooks() *node { _, h := d.top.get("hooks"); return h }

// removeOne removes one entry of ours from event, and the containers our
// removal emptied (the group, the event's array, "hooks" itself). It
// reports whether it found one.
func (d *doc) removeOne(event string) bool {
	hooks := d.hooks()
	gi, hi, ok := ours(hooks, event)
	if !ok {
		return false
	}
	ei, arr := hooks.get(event)
	g := arr.elems[gi]
	_, hs := g.get("hooks")
	switch {
	case len(hs.elems) > 1 || !d.createdGroup(g, hs.elems[hi]):
		d.set(removeItem(d.src, hs, hi))
	case len(arr.elems) > 1 || d.text(arr) != "["+d.text(g)+"]":
		d.set(removeItem(d.src, arr, gi))
	case len(hooks.members) > 1 || !d.createdHooks(hooks):
		d.set(removeItem(d.src, hooks, ei))
	default:
		ti, _ := d.top.get("hooks")
		d.set(removeItem(d.src, d.top, ti))
	}
	return true
}

func (d *doc) text(n *node) string { return string(d.src[n.start:n.end]) }

// A container goes with our entry only when install created it: a group,
// an event's array or "hooks" that the user had, even empty, stays. What
// install creates has an exact shape; what it inserts into the user's
// empty containers never has that shape (appendItem).
func (d *doc) createdGroup(g, h *node) bool {
	return d.text(g) == `{"hooks": [`+d.text(h)+`]}`
}

// createdHooks: "hooks" as install writes it, its one member on its own
// line, indented deeper than the closing brace (which is indented too).
func (d *doc) createdHooks(h *node) bool {
	m := h.members[0]
	w1 := string(d.src[h.start+1 : m.keyStart])
	w2 := string(d.src[m.val.end : h.end-1])
	indented := func(w string) bool {
		w = strings.TrimPrefix(strings.TrimPrefix(w, "\r"), "\n")
		return w != "" && strings.Trim(w, " \t") == ""
	}
	return strings.HasPrefix(strings.TrimPrefix(w1, "\r"), "\n") && strings.HasPrefix(strings.TrimPrefix(w2, "\r"), "\n") &&
		indented(w1) && indented(w2) && len(w1) > len(w2)
}

// Install returns src with our entries for every event in Events, each
// running command: an older entry of ours is upgraded in place, one on an
// event no longer registered is removed, the rest is left as it is.
func Install(src []byte, command string) ([]byte, error) {
	d, err := load(src)
	if err != nil {
		return nil, err
	}
	f := detectFormat(src)
	if d.hooks() == nil {
		var b strings.Builder
		b.WriteString(`"hooks": {`)
		for i, ev := range Events {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%s%s%q: [%s]", f.nl, f.indent(2), ev, group(command))
		}
		b.WriteString(f.nl + f.indent(1) + "}")
		d.set(appendItem(d.src, d.top, b.String(), f, 0))
		return d.src, nil
	}
	want := entry(command)
	for _, ev := range Events {
		hooks := d.hooks()
		if hooks == nil {
			// A removal below emptied it: start again from the top.
			return Install(d.src, command)
		}
		gi, hi, ok := ours(hooks, ev)
		if !ok {
			_, arr := hooks.get(ev)
			if arr == nil || arr.kind != kArray {
				d.set(appendItem(d.src, hooks, fmt.Sprintf("%q: [%s]", ev, group(command)), f, 1))
			} else {
				d.set(appendItem(d.src, arr, group(command), f, 2))
			}
			continue
		}
		_, arr := hooks.get(ev)
		_, hs := arr.elems[gi].get("hooks")
		h := hs.elems[hi]
		if string(d.src[h.start:h.end]) != want {
			d.set(splice(d.src, h.start, h.end, want))
		}
		// A duplicate of ours (two installs raced, or a copy by hand) goes.
		d.dedupe(ev)
	}
	for _, ev := range registered(d) {
		if !slices.Contains(Events, ev) {
			for d.hooks() != nil && d.removeOne(ev) {
			}
		}
	}
	return d.src, nil
}

// dedupe keeps the first entry of ours on event and removes the others.
func (d *doc) dedupe(event string) {
	for {
		hooks := d.hooks()
		_, arr := hooks.get(event)
		var last [2]int
		n := 0
		for at := range oursIn(arr) {
			last, n = at, n+1
		}
		if n <= 1 {
			return
		}
		// Remove the last one (the first is the one install keeps).
		gi, hi := last[0], last[1]
		if _, hs := arr.elems[gi].get("hooks"); len(hs.elems) > 1 {
			d.set(removeItem(d.src, hs, hi))
		} else {
			d.set(removeItem(d.src, arr, gi))
		}
	}
}

// registered lists the events that hold an entry of ours.
func registered(d *doc) []string {
	hooks := d.hooks()
	if hooks == nil {
		return nil
	}
	var out []string
	for _, m := range hooks.members {
		if _, _, ok := ours(hooks, m.key); ok && !slices.Contains(out, m.key) {
			out = append(out, m.key)
		}
	}
	return out
}

// Uninstall returns src without any entry of ours. Containers our removal
// emptied go too, so a file install changed and nothing else did comes
// back byte for byte.
func Uninstall(src []byte) ([]byte, error) {
	d, err := load(src)
	if err != nil {
		return nil, err
	}
	for _, ev := range registered(d) {
		for d.hooks() != nil && d.removeOne(ev) {
		}
	}
	return d.src, nil
}

// Installed describes our entries in a settings file.
type Installed struct {
	// Events that hold an entry of ours, in file order.
	Events []string
	// Commands are the distinct commands of our entries.
	Commands []string
	// Current: every event in Events holds exactly the entry Install
	// would write for the command it was asked about.
	Current bool
}

// Inspect reports our entries in src; command is what Install would write
// now (empty: do not judge Current).
func Inspect(src []byte, command string) (Installed, error) {
	d, err := load(src)
	if err != nil {
		return Installed{}, err
	}
	var in Installed
	in.Events = registered(d)
	hooks := d.hooks()
	for _, ev := range in.Events {
		_, arr := hooks.get(ev)
		for _, h := range oursIn(arr) {
			_, c := h.get("command")
			if c != nil && !slices.Contains(in.Commands, c.str) {
				in.Commands = append(in.Commands, c.str)
			}
		}
	}
	if command != "" {
		want, err := Install(src, command)
		in.Current = err == nil && string(want) == string(src)
	}
	return in, nil
}

// newFile is what Install writes when there is no settings file yet; a
// file install created that comes back to this empty form on uninstall is
// removed. Whether install created it is what the marker beside it says
// (createdSuffix): a user's own file of exactly this text stays.
const newFile = "{\n}\n"

// createdSuffix names the marker install leaves beside a settings file it
// created.
const createdSuffix = ".session-supervisor-created"

// Change is the outcome of InstallFile or UninstallFile.
type Change struct {
	Path string
	// Changed: the file was written (or removed).
	Changed bool
	// Backup is the copy of the previous file, when there was one.
	Backup string
}

// InstallFile installs our entries in the settings file at path (a missing
// file is created, owner-only).
func InstallFile(path, command string) (Change, error) {
	return editFile(path, func(src []byte) ([]byte, error) { return Install(src, command) })
}

// UninstallFile removes our entries from the settings file at path.
func UninstallFile(path string) (Change, error) {
	return editFile(path, Uninstall)
}

// ReadSettings reads the file at path; a missing file reads as absent
// (nil, nil).
func ReadSettings(path string) ([]byte, error) {
	src, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return src, nil
}

// editFile reads, changes and writes back atomically, keeping a backup.
// A symlinked file (a dotfiles manager) is edited where it points.
func editFile(path string, edit func([]byte) ([]byte, error)) (Change, error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	ch := Change{Path: path}
	src, err := ReadSettings(path)
	if err != nil {
		return ch, err
	}
	existed := src != nil
	if !existed {
		src = []byte(newFile)
	}
	out, err := edit(src)
	if err != nil {
		return ch, fmt.Errorf("%s: %w (left untouched)", path, err)
	}
	if string(out) == string(src) {
		return ch, nil
	}
	marker := path + createdSuffix
	if _, err := os.Stat(marker); existed && string(out) == newFile && err == nil {
		// Only the empty object install created is left.
		if err := os.Remove(path); err != nil {
			return ch, fmt.Errorf("removing %s: %w", path, err)
		}
		_ = os.Remove(marker)
		ch.Changed = true
		return ch, nil
	}
	if existed {
		if ch.Backup, err = backup(path, src, time.Now()); err != nil {
			return ch, err
		}
	}
	if err := writeAtomic(path, out); err != nil {
		return ch, err
	}
	if !existed {
		if err := os.WriteFile(marker, nil, 0o600); err != nil {
			return ch, fmt.Errorf("marking %s as created by install: %w", path, err)
		}
	}
	ch.Changed = true
	return ch, nil
}

// keepBackups is how many backups of the settings file are kept: enough to
// go back a few edits, few enough not to litter the user's directory.
const keepBackups = 5

// backup writes src, the file about to be replaced, beside it as
// PATH.session-supervisor-TIME.bak (owner-only: settings may hold
// secrets), never over an earlier backup, then removes all but the newest
// keepBackups. The names sort by time.
func backup(path string, src []byte, now time.Time) (string, error) {
	stamp := path + ".session-supervisor-" + now.UTC().Format("20060102T150405.000000000Z")
	for i := 0; ; i++ {
		name := stamp + ".bak"
		if i > 0 {
			name = fmt.Sprintf("%s-%d.bak", stamp, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("backing up %s: %w", path, err)
		}
		_, err = f.Write(src)
		if serr := f.Sync(); err == nil {
			err = serr
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
			return "", fmt.Errorf("backing up %s: %w", path, err)
		}
		pruneBackups(path)
		return name, nil
	}
}

// pruneBackups removes all but the newest keepBackups backups of path. A
// failure leaves one more file behind, which is no reason to fail the edit.
func pruneBackups(path string) {
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(filepath.Clean(dir))
	if err != nil {
		return
	}
	var old []string
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, base+".session-supervisor-") && strings.HasSuffix(n, ".bak") && !e.IsDir() {
			old = append(old, n)
		}
	}
	if len(old) <= keepBackups {
		return
	}
	slices.Sort(old)
	for _, name := range old[:len(old)-keepBackups] {
		_ = os.Remove(filepath.Join(dir, name))
	}
}

// writeAtomic writes b to path through a temporary file in the same
// directory and a rename: a reader (the CLI starting) sees the old file or
// the new one, never half of one. The mode is kept; a new file is
// owner-only.
func writeAtomic(path string, b []byte) error {
	mode := fs.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename this fails harmlessly
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
