//go:build unix

package claudeterm

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The peer token goes only to a socket of the user that others may not
// connect to or replace: a session file can name any path.
func TestSendInboxChecksTheSocket(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir, path string)
		// refused is what the error says; "" when the frame is delivered.
		refused string
	}{
		{"the user's private socket", func(t *testing.T, dir, path string) { chmod(t, path, 0o600) }, ""},
		{"any mode in a private directory", func(t *testing.T, dir, path string) { chmod(t, path, 0o777) }, ""},
		{"group-writable, the user's own group", func(t *testing.T, dir, path string) {
			chmod(t, dir, 0o755)
			chmod(t, path, 0o770)
		}, ""},
		{"writable by others", func(t *testing.T, dir, path string) {
			chmod(t, dir, 0o755)
			chmod(t, path, 0o666)
		}, "writable by other users (mode 0666, directory 0755)"},
		{"writable by another group", func(t *testing.T, dir, path string) {
			asRoot(t)
			chmod(t, dir, 0o755)
			chmod(t, path, 0o660)
			if err := os.Lchown(path, os.Getuid(), 4242); err != nil {
				t.Fatal(err)
			}
		}, "writable by other users (mode 0660"},
		{"a directory others may write to", func(t *testing.T, dir, path string) { chmod(t, dir, 0o777) }, "could hold a replaced socket"},
		{"another user's", func(t *testing.T, dir, path string) {
			asRoot(t)
			if err := os.Lchown(path, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		}, "belongs to uid 4242"},
		{"not a socket", func(t *testing.T, dir, path string) {
			os.Remove(path)
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "is not a socket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "inbox")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			path := filepath.Join(dir, "s.sock")
			l, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			got := make(chan string, 1)
			go func() {
				c, err := l.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				got <- line
			}()
			tt.setup(t, dir, path)
			err = SendInbox(context.Background(), path, "secret-token", "go on", false)
			if tt.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tt.refused) {
					t.Fatalf("SendInbox = %v, want a refusal saying %q", err, tt.refused)
				}
				select {
				case line := <-got:
					t.Fatalf("the token reached a refused socket: %q", line)
				default:
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if line := <-got; !strings.Contains(line, "secret-token") {
				t.Errorf("the auth line %q lacks the token", line)
			}
		})
	}
}

func asRoot(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root to give a file to another user or group")
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}
