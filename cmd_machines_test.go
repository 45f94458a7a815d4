package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/testdir"
)

// The bridge passes a request to the app's socket, the end of its input
// as a half close, and the app's whole answer back.
func TestDialStdioRelaysBothWays(t *testing.T) {
	dir := testdir.Short(t, "dial") // short: the socket's path
	l, err := net.Listen("unix", filepath.Join(dir, localapi.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan string, 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer conn.Close()
		b, _ := io.ReadAll(conn) // ends only at the bridge's half close
		got <- string(b)
		conn.Write([]byte("answer after the request ended"))
	}()
	var out, errOut bytes.Buffer
	c := &cli{stdin: strings.NewReader("GET /v1/health"), stdout: &out, stderr: &errOut}
	if code := c.main([]string{"--data-dir", dir, "dial-stdio"}); code != 0 {
		t.Fatalf("dial-stdio exit %d: %s", code, errOut.String())
	}
	if req := <-got; req != "GET /v1/health" {
		t.Errorf("the app received %q", req)
	}
	if out.String() != "answer after the request ended" {
		t.Errorf("the bridge wrote %q", out.String())
	}
}

func TestDialStdioWithoutAnAppSaysHowToStartOne(t *testing.T) {
	code, _, errOut := runCLI(t, "--data-dir", t.TempDir(), "dial-stdio")
	if code == 0 || !strings.Contains(errOut, "no Session Supervisor runs on this machine") || !strings.Contains(errOut, "service start") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestMachinesCommands(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"machines", "ls"}, 0, "no machines yet", ""},
		{[]string{"machines", "add", "dev", "me@devbox:2222", "--command", "/opt/ss"}, 0, "added dev (me@devbox:2222)", ""},
		{[]string{"machines", "add", "dev", "other"}, 1, "", "exists already"},
		{[]string{"machines", "add", "x", "me@-oProxyCommand=sh"}, 1, "", "not a host"},
		{[]string{"machines", "add", "x"}, 2, "", "takes NAME and"},
		{[]string{"--machine", "dev", "settings", "list"}, 2, "", "--machine goes with"},
		{[]string{"--machine", "nope", "ls"}, 1, "", "no machine named nope"},
		{[]string{"--machine", "dev", "new", "--cwd", "rel", "hi"}, 2, "", "absolute path"},
		{[]string{"machines", "rm", "dev"}, 0, "removed dev", ""},
		{[]string{"machines", "rm", "dev"}, 1, "", "no machine named dev"},
	}
	for _, tt := range tests {
		code, out, errOut := runCLI(t, append([]string{"--data-dir", dir}, tt.args...)...)
		if code != tt.code || !strings.Contains(out, tt.out) || !strings.Contains(errOut, tt.err) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d, %q, %q", tt.args, code, out, errOut, tt.code, tt.out, tt.err)
		}
	}
}

// dial-stdio --start starts the user's service when nothing answers, waits
// for its socket and relays; its words stay off stdout (the connection).
func TestDialStdioStartsTheServiceWhenAsked(t *testing.T) {
	dir := testdir.Short(t, "dial")
	socket := filepath.Join(dir, localapi.SocketName)
	served := make(chan struct{})
	started := false
	useServiceManager(t, t.TempDir(), func(_ context.Context, _ string, args ...string) (string, string, error) {
		if !slices.Contains(args, "start") || started {
			return "inactive\n", "", nil
		}
		started = true
		l, err := net.Listen("unix", socket)
		if err != nil {
			return "", "", err
		}
		go func() {
			defer close(served)
			defer l.Close()
			conn, err := l.Accept()
			if err != nil {
				return
			}
			conn.Write([]byte("the service answers"))
			conn.Close()
		}()
		return "", "", nil
	})
	if code, _, errOut := runCLI(t, "--data-dir", dir, "service", "install"); code != 0 {
		t.Fatalf("service install: %s", errOut)
	}
	var out, errOut bytes.Buffer
	c := &cli{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}
	if code := c.main([]string{"--data-dir", dir, "dial-stdio", "--start"}); code != 0 {
		t.Fatalf("dial-stdio --start: exit %d: %s", code, errOut.String())
	}
	<-served
	if !started || out.String() != "the service answers" || !strings.Contains(errOut.String(), "Started the") {
		t.Errorf("started %v, stdout %q, stderr %q", started, out.String(), errOut.String())
	}
}
