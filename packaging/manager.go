package packaging

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Spec is what the service runs. Executable must be absolute: a service
// manager does not start in the user's working directory or with their PATH.
type Spec struct {
	// Executable is the absolute path of the session-supervisor binary.
	Executable string
	// DataDir is passed as --data-dir when set; empty means the default data
	// directory, which `run` finds on its own.
	DataDir string
	// Headless runs `run --headless`: no window or tray. Always true for the
	// Windows service (a service cannot show one); on Linux it also makes the
	// unit start with the user manager (default.target) instead of the
	// graphical session.
	Headless bool
	// PathEnv is written into the unit as PATH. The service manager's own
	// PATH is minimal (/usr/bin:/bin…), so agent CLIs installed under
	// ~/.local/bin, an npm prefix or Homebrew would not be found; the PATH
	// of the shell that ran `service install` is the one the user's agents
	// work with.
	PathEnv string
}

// Args are the arguments after the executable.
func (s Spec) Args() []string {
	args := []string{"run"}
	if s.Headless {
		args = append(args, "--headless")
	}
	if s.DataDir != "" {
		args = append(args, "--data-dir", s.DataDir)
	}
	return args
}

// toggleHeadless is spec with the other Headless choice. Status calls a
// unit current when it matches either: `status` and doctor do not know which
// one the user installed, and both are valid.
func toggleHeadless(s Spec) Spec {
	s.Headless = !s.Headless
	return s
}

// Validate refuses a spec a service manager could not run.
func (s Spec) Validate() error {
	if s.Executable == "" || !filepath.IsAbs(s.Executable) {
		return fmt.Errorf("the service needs the binary's absolute path, got %q", s.Executable)
	}
	if s.DataDir != "" && !filepath.IsAbs(s.DataDir) {
		return fmt.Errorf("the service needs an absolute data directory, got %q", s.DataDir)
	}
	// `go run` builds into a temporary directory that is deleted when it
	// exits: a unit pointing there would fail at the next login.
	if strings.Contains(filepath.ToSlash(s.Executable), "/go-build") {
		return &Problem{
			What: fmt.Sprintf("%s is a temporary `go run` build that will be deleted", s.Executable),
			Fix:  "make build && ./bin/session-supervisor service install",
		}
	}
	return nil
}

// Manager installs and controls the per-user service on one platform.
type Manager interface {
	// Kind names the mechanism ("systemd user unit", "launchd agent", …).
	Kind() string
	// UnitPath is where install writes the unit (a file, or a registry key
	// on Windows).
	UnitPath() string
	// Install writes the unit and arranges for it to start at login. It is
	// idempotent: a second install with the same spec changes nothing, and
	// one with a different spec (the binary moved) rewrites the unit.
	Install(ctx context.Context) (InstallResult, error)
	// Uninstall stops the service and removes exactly what Install wrote.
	Uninstall(ctx context.Context) (UninstallResult, error)
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	Restart(ctx context.Context) error
	Status(ctx context.Context) (Status, error)
}

// Change says what Install did to the unit file.
type Change string

// The possible changes.
const (
	Created   Change = "created"
	Updated   Change = "updated"
	Unchanged Change = "unchanged"
)

// InstallResult reports an install. When Install also returns an error the
// result still says what was written, so the user knows what is on disk.
type InstallResult struct {
	Path    string `json:"path"`
	Change  Change `json:"change"`
	Enabled bool   `json:"enabled"`
	// Running says the service was already running: with a changed unit it
	// keeps the old settings until it is restarted.
	Running bool `json:"running"`
}

// UninstallResult reports an uninstall.
type UninstallResult struct {
	// Removed lists what was removed, in order; empty when nothing was
	// installed.
	Removed []string `json:"removed"`
	// Note explains something the user may want to know (the service
	// manager could not be told), without failing the uninstall.
	Note string `json:"note,omitempty"`
}

// State is the service's run state.
type State string

// The states Status reports.
const (
	StateNotInstalled State = "not installed"
	StateRunning      State = "running"
	StateStopped      State = "stopped"
	StateFailed       State = "failed"
	// StateUnknown: installed, but the service manager could not be asked.
	StateUnknown State = "unknown"
)

// Status is what `service status` and `doctor` report.
type Status struct {
	Kind      string `json:"kind"`
	UnitPath  string `json:"unit_path"`
	Installed bool   `json:"installed"`
	State     State  `json:"state"`
	// Enabled: the service starts at login.
	Enabled bool `json:"enabled"`
	// Current: the installed unit is what Install would write now (same
	// binary, data directory and options). False after the binary moved.
	Current bool `json:"current"`
	// Command is the command line the installed unit runs, when known.
	Command string `json:"command,omitempty"`
	// Problem explains why the state is unknown or failed, with the fix.
	Problem *Problem `json:"problem,omitempty"`
}

// Problem is an error the user can fix, with the command that fixes it.
type Problem struct {
	What string
	Err  error
	Fix  string
}

func (p *Problem) Error() string {
	s := p.What
	if p.Err != nil {
		s += ": " + p.Err.Error()
	}
	if p.Fix != "" {
		s += "\n  fix: " + p.Fix
	}
	return s
}

func (p *Problem) Unwrap() error { return p.Err }

// MarshalJSON includes the underlying error's text, which `status --json`
// readers need as much as the headline.
func (p *Problem) MarshalJSON() ([]byte, error) {
	out := struct {
		What  string `json:"what"`
		Error string `json:"error,omitempty"`
		Fix   string `json:"fix,omitempty"`
	}{What: p.What, Fix: p.Fix}
	if p.Err != nil {
		out.Error = p.Err.Error()
	}
	return json.Marshal(out)
}

// Runner runs a command and returns its stdout and stderr. The error is the
// command's (exec.ErrNotFound, *exec.ExitError, a timeout).
type Runner func(ctx context.Context, name string, args ...string) (stdout, stderr string, err error)

// commandTimeout bounds one systemctl/launchctl call: they answer in
// milliseconds, and a hung user bus must not hang `service status` or doctor.
const commandTimeout = 20 * time.Second

// ExecRunner runs commands for real.
func ExecRunner(ctx context.Context, name string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// A child that keeps our pipes open after being killed must not keep
	// us waiting.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%s %s did not answer within %s: %w", name, strings.Join(args, " "), commandTimeout, ctx.Err())
	}
	return out.String(), errOut.String(), err
}

// New returns the Manager for this OS, for spec.
func New(spec Spec) (Manager, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("finding the home directory: %w", err)
	}
	return newManager(runtime.GOOS, spec, os.Getenv, home, os.Getuid(), ExecRunner)
}

// newManager picks the Manager with every input passed in, so each
// platform's files can be tested on any OS.
func newManager(goos string, spec Spec, getenv func(string) string, home string, uid int, run Runner) (Manager, error) {
	switch goos {
	case "linux":
		return &SystemdUser{spec: spec, configHome: ConfigHome(getenv, home), run: run}, nil
	case "darwin":
		return &LaunchAgent{spec: spec, home: home, uid: uid, run: run}, nil
	case "windows":
		return newWindowsManager(spec)
	}
	return nil, &Problem{
		What: fmt.Sprintf("installing as a service is not supported on %s", goos),
		Fix:  "start `session-supervisor run` from your session's autostart",
	}
}

// writeIfChanged writes content to path (creating its directory with 0755,
// the mode service managers expect for their search paths) unless the file
// already holds exactly that content, and says what it did.
func writeIfChanged(path string, content []byte, mode os.FileMode) (Change, error) {
	old, err := os.ReadFile(path)
	switch {
	case err == nil && string(old) == string(content):
		return Unchanged, nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	change := Created
	if err == nil {
		change = Updated
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", permissionProblem(fmt.Sprintf("creating %s", filepath.Dir(path)), err)
	}
	// Write a sibling and rename, so a crash never leaves a half-written
	// unit that the service manager would choke on at the next login.
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return "", permissionProblem(fmt.Sprintf("writing %s", path), err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", permissionProblem(fmt.Sprintf("writing %s", path), err)
	}
	return change, nil
}

// permissionProblem adds the fix to a permission error: usually the
// directory was created by an earlier `sudo` run and belongs to root.
func permissionProblem(what string, err error) error {
	if errors.Is(err, os.ErrPermission) {
		return &Problem{What: what, Err: err,
			Fix: "the directory is not yours (an earlier sudo run?): sudo chown -R \"$USER\" the directory, then run this again without sudo"}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// removeIfEmpty removes dir when it is empty and reports whether it did.
// Uninstall uses it for the directories Install may have created: an empty
// directory left behind is clutter, a non-empty one is someone else's.
func removeIfEmpty(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) > 0 {
		return false
	}
	return os.Remove(dir) == nil
}

func isNotFound(err error) bool { return errors.Is(err, exec.ErrNotFound) }

// unitStatus starts the Status of a manager whose unit is a file: not
// installed when there is no file at path, else installed, with the
// file's text for the manager's own checks.
func unitStatus(kind, path string) (st Status, unit string, err error) {
	st = Status{Kind: kind, UnitPath: path, State: StateNotInstalled}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, "", nil
	}
	if err != nil {
		return st, "", fmt.Errorf("reading %s: %w", path, err)
	}
	st.Installed = true
	return st, string(b), nil
}
