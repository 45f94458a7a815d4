package machines

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions/textsafe"
)

// SSHCommandSetting names the ssh program and its extra options
// (`ssh -F ~/.ssh/work_config`, a wrapper, a test's own config).
const SSHCommandSetting = "machines.ssh_command"

// sshOptions are the options every connection gets: never a prompt (a
// tray app has no terminal to ask in), and keep-alives so a machine that
// drops is noticed in about 30 seconds.
var sshOptions = []string{
	"-T",
	"-o", "BatchMode=yes",
	"-o", "ServerAliveInterval=10",
	"-o", "ServerAliveCountMax=3",
	"-o", "ConnectTimeout=15",
}

// Argv is the command line that opens a bridge to m's supervisor: the
// user's ssh command, our options, then the host and the remote command.
func Argv(sshCommand []string, m Machine) []string {
	argv := append(append([]string{}, sshCommand...), sshOptions...)
	if m.Port != 0 {
		argv = append(argv, "-p", strconv.Itoa(m.Port))
	}
	if m.User != "" {
		argv = append(argv, "-l", m.User)
	}
	return append(argv, "--", m.Host, m.RemoteCommand()+" dial-stdio")
}

// SplitCommand reads the ssh command setting: words split on white space
// (quoting is not read; a path with spaces goes in a wrapper script).
func SplitCommand(setting string) ([]string, error) {
	words := strings.Fields(setting)
	if len(words) == 0 {
		return nil, fmt.Errorf("%s is empty: set it to ssh or the program to run", SSHCommandSetting)
	}
	return words, nil
}

// Error is a connection to a machine that failed before its supervisor
// answered, with what ssh or the remote said about it.
type Error struct {
	Machine string
	// ExitCode is ssh's (255: ssh itself failed; 127: no app on the
	// remote; otherwise the bridge's own).
	ExitCode int
	// Said is the last line ssh or the remote wrote to its standard
	// error, stripped of control characters.
	Said string
}

func (e *Error) Error() string {
	switch {
	case e.ExitCode == 127:
		return fmt.Sprintf("machine %s: the app is not installed there, or not on its PATH (%s); set its path with machines add --command", e.Machine, e.Said)
	case e.Said != "":
		return fmt.Sprintf("machine %s: %s", e.Machine, e.Said)
	}
	return fmt.Sprintf("machine %s: the connection ended (ssh exited with %d)", e.Machine, e.ExitCode)
}

// Client returns an API client for m's supervisor: each connection the
// client opens is one ssh process running the bridge.
func Client(sshCommand []string, m Machine) *localapi.Client {
	argv := Argv(sshCommand, m)
	return localapi.NewDialClient("machine "+m.Name, func(ctx context.Context) (net.Conn, error) {
		return dial(ctx, m.Name, argv)
	})
}

// dial starts one ssh process and returns its standard input and output as
// a connection.
func dial(ctx context.Context, machine string, argv []string) (net.Conn, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &cmdConn{machine: machine, cmd: cmd, stdin: stdin, stdout: stdout, done: make(chan struct{})}
	cmd.Stderr = &c.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("machine %s: starting %s: %w", machine, argv[0], err)
	}
	go func() {
		c.waitErr = cmd.Wait()
		close(c.done)
	}()
	if err := ctx.Err(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// cmdConn is a child process's standard input and output as a net.Conn.
// Deadlines are not kept (the HTTP client cancels by closing).
type cmdConn struct {
	machine string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  io.ReadCloser
	stderr  tailBuffer
	done    chan struct{}
	waitErr error
	closing sync.Once
}

func (c *cmdConn) Read(p []byte) (int, error) {
	n, err := c.stdout.Read(p)
	if err == io.EOF || errors.Is(err, os.ErrClosed) {
		// The reaper (cmd.Wait) closes the pipe once the process exited,
		// so a read that comes after it finds the pipe closed rather than
		// at its end: the same end of the output.
		if ferr := c.failure(); ferr != nil {
			return n, ferr
		}
		err = io.EOF
	}
	return n, err
}

func (c *cmdConn) Write(p []byte) (int, error) {
	n, err := c.stdin.Write(p)
	if err != nil {
		if ferr := c.failure(); ferr != nil {
			return n, ferr
		}
	}
	return n, err
}

// failure waits briefly for the process to end after its output closed
// and, when it failed, says why in the remote's words.
func (c *cmdConn) failure() error {
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		return nil
	}
	var exit *exec.ExitError
	if !errors.As(c.waitErr, &exit) {
		return nil
	}
	return &Error{Machine: c.machine, ExitCode: exit.ExitCode(), Said: c.stderr.lastLine()}
}

// Close ends the connection: the bridge sees its input end and exits; a
// process that does not within a second is killed.
func (c *cmdConn) Close() error {
	c.closing.Do(func() {
		c.stdin.Close()
		select {
		case <-c.done:
		case <-time.After(time.Second):
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	})
	return nil
}

func (c *cmdConn) LocalAddr() net.Addr              { return addr(c.machine) }
func (c *cmdConn) RemoteAddr() net.Addr             { return addr(c.machine) }
func (c *cmdConn) SetDeadline(time.Time) error      { return nil }
func (c *cmdConn) SetReadDeadline(time.Time) error  { return nil }
func (c *cmdConn) SetWriteDeadline(time.Time) error { return nil }
func (c *cmdConn) String() string                   { return "ssh to " + c.machine }
func (a addr) Network() string                      { return "ssh" }
func (a addr) String() string                       { return string(a) }

type addr string

// tailBuffer keeps the last few KiB a process writes to its standard
// error: enough for ssh's reason, bounded whatever the remote prints.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 4096

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailMax {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-tailMax:]...)
	}
	return len(p), nil
}

// lastLine is the last non-empty line written, cleaned of control
// characters (the remote's text reaches the user's terminal and tray).
func (t *tailBuffer) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := bytes.Split(bytes.TrimSpace(t.buf), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(textsafe.Clean(string(lines[i]))); l != "" {
			return l
		}
	}
	return ""
}

// Advice is what the user can do about a failed connection to m.
func Advice(err error, m Machine) string {
	var e *Error
	if !errors.As(err, &e) {
		if strings.Contains(err.Error(), "API version") {
			return "update the older of the two apps"
		}
		return fmt.Sprintf("check that the app on %s answers: ssh %s %s doctor", m.Name, m.Target(), m.RemoteCommand())
	}
	switch {
	case e.ExitCode == 127:
		return fmt.Sprintf("install the app on %s, or give its path: machines rm %s; machines add %s %s --command PATH", m.Name, m.Name, m.Name, m.Target())
	case e.ExitCode == 255:
		return fmt.Sprintf("make 'ssh %s true' work without a prompt (host key in known_hosts, your key accepted, the host reachable): the connection runs in BatchMode", m.Target())
	case strings.Contains(e.Said, "no Session Supervisor runs"):
		return fmt.Sprintf("start it on %s: session-supervisor service start (or run --headless)", m.Name)
	}
	return fmt.Sprintf("run 'ssh %s %s doctor' to see what is wrong there", m.Target(), m.RemoteCommand())
}
