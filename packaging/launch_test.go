package packaging

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestDetectLaunch(t *testing.T) {
	stderr := func() (uint64, uint64, bool) { return 64769, 1234, true }
	cases := []struct {
		name       string
		goos       string
		env        map[string]string
		winService bool
		want       Launch
	}{
		{"terminal", "linux", nil, false, LaunchTerminal},
		{"our unit", "linux", map[string]string{EnvService: "systemd"}, false, LaunchSystemd},
		{"a hand-written unit: stderr is the journal", "linux", map[string]string{"JOURNAL_STREAM": "64769:1234"}, false, LaunchSystemd},
		// A terminal started from a service inherits JOURNAL_STREAM, but
		// its stderr is the terminal, not the journal.
		{"inherited JOURNAL_STREAM", "linux", map[string]string{"JOURNAL_STREAM": "64769:999"}, false, LaunchTerminal},
		{"our plist", "darwin", map[string]string{EnvService: "launchd"}, false, LaunchLaunchd},
		{"a hand-loaded plist with our label", "darwin", map[string]string{"XPC_SERVICE_NAME": AppID}, false, LaunchLaunchd},
		{"Terminal.app", "darwin", map[string]string{"XPC_SERVICE_NAME": "0"}, false, LaunchTerminal},
		{"Windows service", "windows", nil, true, LaunchWindowsService},
		{"Windows console", "windows", nil, false, LaunchTerminal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := detectLaunch(tc.goos, func(k string) string { return tc.env[k] }, func() bool { return tc.winService }, stderr)
			if got != tc.want {
				t.Errorf("detectLaunch = %s, want %s", got, tc.want)
			}
			if got.Interactive() != (tc.want == LaunchTerminal) {
				t.Errorf("Interactive() = %v", got.Interactive())
			}
		})
	}
}

func TestJournalHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewJournalHandler(&buf, slog.LevelDebug)).With("pid", 42)
	log.Debug("probe")
	log.Info("running", "data_dir", "/d")
	log.WithGroup("g").Warn("slow", "ms", 900)
	log.Error("boom", "err", "multi\nline")
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	want := []string{
		`<7>level=DEBUG msg=probe pid=42`,
		`<6>level=INFO msg=running pid=42 data_dir=/d`,
		`<4>level=WARN msg=slow pid=42 g.ms=900`,
		`<3>level=ERROR msg=boom pid=42 err="multi\nline"`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("journal lines:\n%s\nwant:\n%s", buf.String(), strings.Join(want, "\n"))
	}
}

func TestRotatingFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	path := filepath.Join(dir, "x.log")
	f, err := OpenRotatingFile(path, 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("a", 39) + "\n" // 40 bytes
	for i := 0; i < 7; i++ {
		if _, err := f.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// 7 lines at 2 per file: x.log.2 (dropped one before), x.log.1, x.log.
	sizes := map[string]int64{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		fi, _ := e.Info()
		sizes[e.Name()] = fi.Size()
		if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", e.Name(), fi.Mode().Perm())
		}
	}
	want := map[string]int64{"x.log": 40, "x.log.1": 80, "x.log.2": 80}
	if len(sizes) != len(want) {
		t.Fatalf("files %v, want %v", sizes, want)
	}
	for k, v := range want {
		if sizes[k] != v {
			t.Errorf("files %v, want %v", sizes, want)
		}
	}
	if fi, _ := os.Stat(dir); runtime.GOOS != "windows" && fi.Mode().Perm() != 0o700 {
		t.Errorf("log dir mode %v, want 0700", fi.Mode().Perm())
	}
	// Reopening appends to what is there.
	f, err = OpenRotatingFile(path, 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte(line))
	f.Close()
	if b, _ := os.ReadFile(path); len(b) != 80 {
		t.Errorf("reopened log has %d bytes, want 80", len(b))
	}
}

func TestNewLoggerPerLaunch(t *testing.T) {
	for _, tc := range []struct {
		launch     Launch
		toStderr   bool
		wantPrefix string
	}{
		{LaunchTerminal, true, "time="},
		{LaunchSystemd, true, "<6>level=INFO"},
		{LaunchLaunchd, false, "time="},
		{LaunchWindowsService, false, "time="},
	} {
		t.Run(string(tc.launch), func(t *testing.T) {
			dataDir := t.TempDir()
			var stderr bytes.Buffer
			log, closer, err := NewLogger(tc.launch, dataDir, &stderr, slog.LevelInfo)
			if err != nil {
				t.Fatal(err)
			}
			log.Info("hello")
			if err := closer.Close(); err != nil {
				t.Fatal(err)
			}
			file, _ := os.ReadFile(LogPath(dataDir))
			got := stderr.String()
			if !tc.toStderr {
				got = string(file)
				if stderr.Len() != 0 {
					t.Errorf("a service-started run wrote to stderr: %q", stderr.String())
				}
			} else if len(file) != 0 {
				t.Errorf("wrote a log file for %s", tc.launch)
			}
			if !strings.HasPrefix(got, tc.wantPrefix) || !strings.Contains(got, "msg=hello") {
				t.Errorf("log %q, want prefix %q", got, tc.wantPrefix)
			}
		})
	}
}

func TestXDGDirs(t *testing.T) {
	env := map[string]string{"XDG_DATA_HOME": "/x/data", "XDG_CONFIG_HOME": "rel"}
	getenv := func(k string) string { return env[k] }
	if got := DataHome(getenv, "/h"); got != filepath.FromSlash("/x/data") {
		t.Errorf("DataHome = %s", got)
	}
	if got := ConfigHome(getenv, "/h"); got != filepath.FromSlash("/h/.config") {
		t.Errorf("ConfigHome with a relative XDG_CONFIG_HOME = %s, want ~/.config", got)
	}
	if got := DesktopEntryPath(getenv, "/h"); got != filepath.FromSlash("/x/data/applications/session-supervisor.desktop") {
		t.Errorf("DesktopEntryPath = %s", got)
	}
	if got := IconPath(getenv, "/h", 48); got != filepath.FromSlash("/x/data/icons/hicolor/48x48/apps/session-supervisor.png") {
		t.Errorf("IconPath = %s", got)
	}
	if got := SystemdUserDir(getenv, "/h"); got != filepath.FromSlash("/h/.config/systemd/user") {
		t.Errorf("SystemdUserDir = %s", got)
	}
}
