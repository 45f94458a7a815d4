package machines

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, target string
		want         Machine
		err          string
	}{
		{"dev", "devbox", Machine{Name: "dev", Host: "devbox"}, ""},
		{"dev", "me@devbox", Machine{Name: "dev", Host: "devbox", User: "me"}, ""},
		{"dev", "me@devbox:2222", Machine{Name: "dev", Host: "devbox", User: "me", Port: 2222}, ""},
		{"v6", "[::1]:22", Machine{Name: "v6", Host: "::1", Port: 22}, ""},
		{"v6", "[fe80::1]", Machine{Name: "v6", Host: "fe80::1"}, ""},
		{"dev", "devbox:0", Machine{}, "not a port"},
		{"dev", "devbox:99999", Machine{}, "not a port"},
		{"dev", "devbox:ssh", Machine{}, "not a port"},
		{"dev", "", Machine{}, "no host"},
		{"dev", "@devbox", Machine{}, "not a user name"},
		{"dev", "-oProxyCommand=x", Machine{}, "not a host"},
		{"dev", "a b", Machine{}, "not a host"},
		{"local", "devbox", Machine{}, "this machine's own"},
		{"bad name", "devbox", Machine{}, "use letters"},
		{"", "devbox", Machine{}, "use letters"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" "+tt.target, func(t *testing.T) {
			got, err := Parse(tt.name, tt.target, "")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse = %+v, %v; want an error saying %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Parse = %+v, %v; want %+v", got, err, tt.want)
			}
			// What Target prints parses back to the same machine.
			again, err := Parse(tt.name, got.Target(), "")
			if err != nil || again != got {
				t.Fatalf("Parse(Target()) = %+v, %v; want %+v", again, err, got)
			}
		})
	}
}

func TestArgv(t *testing.T) {
	m := Machine{Name: "dev", Host: "devbox", User: "me", Port: 2222, Command: "/opt/ss --data-dir /srv/ss"}
	got := Argv([]string{"ssh", "-F", "/tmp/cfg"}, m)
	want := []string{"ssh", "-F", "/tmp/cfg", "-T", "-o", "BatchMode=yes", "-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3",
		"-o", "ConnectTimeout=15", "-p", "2222", "-l", "me", "--", "devbox", "/opt/ss --data-dir /srv/ss dial-stdio"}
	if !slices.Equal(got, want) {
		t.Errorf("Argv =\n%q\nwant\n%q", got, want)
	}
	if got := Argv([]string{"ssh"}, Machine{Name: "d", Host: "devbox"}); got[len(got)-1] != "session-supervisor dial-stdio" || slices.Contains(got, "-p") || slices.Contains(got, "-l") {
		t.Errorf("Argv without user, port or command = %q", got)
	}
}

func TestListAddRemoveAndFile(t *testing.T) {
	dir := t.TempDir()
	list, err := Load(dir)
	if err != nil || len(list) != 0 {
		t.Fatalf("Load of a new data directory = %v, %v; want an empty list", list, err)
	}
	a, _ := Parse("a", "host-a", "")
	b, _ := Parse("b", "me@host-b:2200", "/opt/ss")
	if list, err = Add(list, a); err != nil {
		t.Fatal(err)
	}
	if list, err = Add(list, b); err != nil {
		t.Fatal(err)
	}
	if _, err := Add(list, a); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("adding a taken name: %v", err)
	}
	if err := Save(dir, list); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the machines file: %v, %v; want owner-only", info, err)
	}
	back, err := Load(dir)
	if err != nil || !slices.Equal(back, list) {
		t.Fatalf("Load after Save = %+v, %v; want %+v", back, err, list)
	}
	if list, err = Remove(back, "a"); err != nil || len(list) != 1 || list[0].Name != "b" {
		t.Fatalf("Remove = %+v, %v", list, err)
	}
	if _, err := Remove(list, "a"); err == nil {
		t.Error("removing a machine not there: no error")
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "fix or remove the file") {
		t.Errorf("Load of a malformed file: %v", err)
	}
}

// A connection whose process fails before answering says why in the
// process's own words, bounded and cleaned.
func TestDialReportsWhyTheProcessEnded(t *testing.T) {
	tests := []struct {
		script string
		code   int
		want   string
	}{
		{"echo 'ssh: connect to host x port 22: Connection refused' >&2; exit 255", 255, "machine m: ssh: connect to host x port 22: Connection refused"},
		{"echo 'bash: /opt/ss: No such file or directory' >&2; exit 127", 127, "the app is not installed there"},
		{"head -c 100000 /dev/zero | tr '\\0' x >&2; printf '\\n\\033[31mred\\033[0m reason\\n' >&2; exit 3", 3, "machine m: red reason"},
		{"exit 1", 1, "ssh exited with 1"},
	}
	for _, tt := range tests {
		// Read as soon as it can, and only after the process's reaper
		// closed its output (a loaded machine's order: the read then
		// finds the pipe closed, not at its end).
		for _, late := range []bool{false, true} {
			conn, err := dial(context.Background(), "m", []string{"sh", "-c", tt.script})
			if err != nil {
				t.Fatal(err)
			}
			if late {
				<-conn.(*cmdConn).done
			}
			_, err = io.ReadAll(conn)
			var e *Error
			if !errors.As(err, &e) || e.ExitCode != tt.code || !strings.Contains(e.Error(), tt.want) {
				t.Errorf("%s (read late: %v): read error %v, want exit %d saying %q", tt.script, late, err, tt.code, tt.want)
			}
			conn.Close()
		}
	}
}

// The connection carries bytes both ways and its Close ends the process.
func TestDialCarriesBytesAndCloseEndsTheProcess(t *testing.T) {
	conn, err := dial(context.Background(), "m", []string{"cat"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "ping\n" {
		t.Fatalf("read back %q, %v", buf, err)
	}
	conn.Close()
	c := conn.(*cmdConn)
	select {
	case <-c.done:
	default:
		t.Fatal("Close returned with the process still running")
	}
}
