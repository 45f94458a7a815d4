package procscan

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// List reads the process table's listing: every pid with its /proc
// inode number, from the directory entries alone (no file of a process is
// opened), so a scan that keeps what it read of each process can tell
// which pids are new at the cost of a few system calls.
func List() ([]Listed, error) { return new(Lister).List() }

// Lister lists the process table again and again with the same buffers:
// a table that lists every few seconds makes no garbage of it. The zero
// value is ready; it is not safe for concurrent use.
type Lister struct {
	buf []byte
	out []Listed
}

// List is List, its answer valid until the next call.
func (l *Lister) List() ([]Listed, error) {
	// Opened with the system call, not os.Open: /proc cannot be polled,
	// and os.File would try (five system calls more per listing).
	fd, err := openRetry("/proc", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("reading the process table: %w", err)
	}
	defer syscall.Close(fd)
	if l.buf == nil {
		l.buf = make([]byte, 32<<10)
	}
	l.out = l.out[:0]
	for {
		n, err := syscall.ReadDirent(fd, l.buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the process table: %w", err)
		}
		if n <= 0 {
			return l.out, nil
		}
		l.out = appendDirents(l.out, l.buf[:n])
	}
}

// appendDirents parses linux_dirent64 records (d_ino u64, d_off s64,
// d_reclen u16, d_type u8, d_name NUL-terminated) and appends the entries
// whose name is a pid.
func appendDirents(out []Listed, b []byte) []Listed {
	for len(b) >= 19 {
		reclen := int(binary.NativeEndian.Uint16(b[16:]))
		if reclen < 19 || reclen > len(b) {
			break
		}
		name := b[19:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if pid := atoiPID(name); pid > 0 {
			out = append(out, Listed{PID: pid, Ino: binary.NativeEndian.Uint64(b)})
		}
		b = b[reclen:]
	}
	return out
}

// atoiPID is name as a pid, 0 when it is not all digits (self, sys, …).
func atoiPID(name []byte) int {
	if len(name) == 0 || len(name) > 9 {
		return 0
	}
	n := 0
	for _, c := range name {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// PIDs lists the pids of the process table, in /proc's order.
func PIDs() ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("reading the process table: %w", err)
	}
	out := make([]int, 0, len(ents))
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out, nil
}

func procPath(pid int, name string) string { return "/proc/" + strconv.Itoa(pid) + "/" + name }

// Comm is pid's kernel name (/proc/PID/comm: the executable's base name cut
// to 15 bytes, or the title the process set); ok is false when the process
// is gone. It is the cheapest read that tells one program from another, so
// a scan reads it first and the rest only for the processes it wants.
func Comm(pid int) (comm string, ok bool) {
	b, err := os.ReadFile(procPath(pid, "comm"))
	if err != nil {
		return "", false
	}
	return string(bytes.TrimSpace(b)), true
}

// Cmdline is pid's command line; ok is false when it cannot be read or is
// empty (the process is gone or exiting, or a kernel thread).
func Cmdline(pid int) (argv []string, ok bool) {
	b, err := os.ReadFile(procPath(pid, "cmdline"))
	if err != nil || len(b) == 0 {
		return nil, false
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), true
}

// Cwd is pid's working directory (an error for another user's process).
func Cwd(pid int) (string, error) { return os.Readlink(procPath(pid, "cwd")) }

// Environ is pid's initial environment, KEY=VALUE each (an error for
// another user's process).
func Environ(pid int) ([]string, error) {
	b, err := os.ReadFile(procPath(pid, "environ"))
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), nil
}

// Named lists the processes whose kernel name (/proc/PID/comm, the
// executable's base name cut to 15 bytes, or the name the program gave its
// main thread) is one of comms. A process that exits during the scan is
// left out; one whose details cannot be read (another user's) is listed
// with what could be read.
func Named(comms ...string) ([]Proc, error) {
	pids, err := PIDs()
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, c := range comms {
		want[c[:min(len(c), 15)]] = true
	}
	var out []Proc
	for _, pid := range pids {
		if c, ok := Comm(pid); !ok || !want[c] {
			continue
		}
		p, st := Probe(pid)
		if st != Running {
			continue
		}
		p.Argv, _ = Cmdline(pid)
		p.Cwd, _ = Cwd(pid)
		out = append(out, p)
	}
	return out, nil
}

// OpenFiles lists the paths of the regular files pid holds open whose base
// name matches pattern (filepath.Match): a writer keeps its log open, so
// this names the file a process writes without guessing.
func OpenFiles(pid int, pattern string) []string {
	dir := procPath(pid, "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		target, err := os.Readlink(dir + "/" + e.Name())
		if err != nil || !strings.HasPrefix(target, "/") {
			continue // sockets, pipes, anonymous inodes
		}
		if ok, _ := filepath.Match(pattern, filepath.Base(target)); ok {
			out = append(out, target)
		}
	}
	return out
}

// StdinTerminal reports whether pid's standard input is a terminal (an
// interactive program in a terminal window, not one fed by a pipe); known
// is false when its descriptors cannot be read (another user's process).
func StdinTerminal(pid int) (tty, known bool) {
	target, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/0")
	if err != nil {
		return false, false
	}
	return strings.HasPrefix(target, "/dev/pts/") || strings.HasPrefix(target, "/dev/tty"), true
}

// Env is the value of the variable name in pid's initial environment; ok
// is false when it is unset or the environment cannot be read (another
// user's process).
func Env(pid int, name string) (value string, ok bool) {
	env, err := Environ(pid)
	if err != nil {
		return "", false
	}
	prefix := name + "="
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, prefix); found {
			return v, true
		}
	}
	return "", false
}

// Probe reads /proc/PID/stat: Gone when missing or a zombie. It is the
// read a scan makes of every process it has not seen and the runtime's
// liveness probe of every agent, so it reads into a buffer on the stack
// with three system calls (open, read, close; os.ReadFile's descriptor
// bookkeeping adds seven more) and allocates only what it returns.
func Probe(pid int) (Proc, State) {
	if pid <= 0 {
		return Proc{}, Unknown
	}
	var buf [statSize]byte
	b, err := readSmall(procPath(pid, "stat"), buf[:])
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ESRCH) {
			return Proc{PID: pid}, Gone
		}
		return Proc{PID: pid}, Unknown
	}
	p, st := parseStat(b, bootTime())
	p.PID = pid
	return p, st
}

// statSize holds any /proc/PID/stat line: 52 numbers of at most 20 digits
// and a name of at most 64 bytes.
const statSize = 2048

// readSmall reads a /proc file that fits in buf in one read (the kernel
// renders it whole at the first), with os.ReadFile when it does not fit.
func readSmall(path string, buf []byte) ([]byte, error) {
	fd, err := openRetry(path, syscall.O_RDONLY|syscall.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	var n int
	for {
		n, err = syscall.Read(fd, buf)
		if err != syscall.EINTR {
			break
		}
	}
	syscall.Close(fd)
	switch {
	case err != nil:
		return nil, err
	case n == len(buf):
		return os.ReadFile(path)
	}
	return buf[:n], nil
}

// readHead reads what of a /proc file fits in buf, in one read.
func readHead(path string, buf []byte) ([]byte, error) {
	fd, err := openRetry(path, syscall.O_RDONLY|syscall.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	for {
		n, err := syscall.Read(fd, buf)
		if err != syscall.EINTR {
			return buf[:max(n, 0)], err
		}
	}
}

// openRetry opens path, again when a signal interrupted the call (the Go
// runtime's preemption signals do).
func openRetry(path string, mode int) (int, error) {
	for {
		fd, err := syscall.Open(path, mode, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// parseStat reads field 2 (the name, between the first '(' and the last
// ')'), field 4 (the parent) and field 22 (the start in clock
// ticks since boot, kept as the Stamp; USER_HZ is 100 on every Linux the
// CLIs run on) after the command name, which may itself hold spaces and
// parentheses.
func parseStat(b []byte, boot time.Time) (Proc, State) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Proc{}, Unknown
	}
	// After ") ": the state is field 3, so the start (field 22) is the
	// 20th field of the rest. A line cut short still tells the state.
	rest := b[i+1:]
	state, rest := nextField(rest)
	if len(state) != 1 {
		return Proc{}, Unknown
	}
	if s := state[0]; s == 'Z' || s == 'X' {
		return Proc{}, Gone
	}
	var p Proc
	if j := bytes.IndexByte(b, '('); j >= 0 && j < i {
		p.Comm = string(b[j+1 : i])
	}
	ppid, rest := nextField(rest)
	var start []byte
	for range 18 { // fields 5 to 22
		if start, rest = nextField(rest); start == nil {
			return p, Running
		}
	}
	p.Stamp = string(start)
	p.PPID, _ = strconv.Atoi(string(ppid))
	if ticks, err := strconv.ParseInt(p.Stamp, 10, 64); err == nil && !boot.IsZero() {
		p.Started = boot.Add(time.Duration(ticks) * (time.Second / 100))
	}
	return p, Running
}

// nextField is b's first space-separated field (nil when there is none)
// and what follows it: bytes.Fields without its slice of every field.
func nextField(b []byte) (field, rest []byte) {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	if len(b) == 0 {
		return nil, nil
	}
	n := 0
	for n < len(b) && !isSpace(b[n]) {
		n++
	}
	return b[:n], b[n:]
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' }

var bootTime = sync.OnceValue(func() time.Time {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			if s, err := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64); err == nil {
				return time.Unix(s, 0)
			}
		}
	}
	return time.Time{}
})

// Children counts the live processes whose parent is pid (known false when
// the table cannot be read): a CLI that runs a tool as a child process is
// running it, one with no child at all is not.
func Children(pid int) (n int, known bool) {
	if pid <= 0 {
		return 0, false
	}
	pids, err := PIDs()
	if err != nil {
		return 0, false
	}
	for _, c := range pids {
		if p, st := Probe(c); st == Running && p.PPID == pid {
			n++
		}
	}
	return n, true
}

// LastPID is the pid the kernel handed out last in this pid namespace (the
// fifth field of /proc/loadavg), false when it cannot be read: while it
// stays the same no process (nor thread) was started, so a table that saw
// the listing then has no new pid to find. One small read, against a
// listing that grows with every process on the machine.
func LastPID() (int, bool) {
	var buf [128]byte
	b, err := readSmall("/proc/loadavg", buf[:])
	if err != nil {
		return 0, false
	}
	return parseLastPID(b)
}

// parseLastPID reads the fifth field of a /proc/loadavg line ("0.52 0.58
// 0.59 1/467 12345").
func parseLastPID(b []byte) (int, bool) {
	f := bytes.Fields(b)
	if len(f) < 5 {
		return 0, false
	}
	pid, err := strconv.Atoi(string(f[4]))
	return pid, err == nil && pid > 0
}

// NewProcess tells whether a process (not a thread) was started with one of
// the ids the kernel handed out after from, up to to (two LastPIDs) and
// still runs, known false when it cannot tell (see newProcessIn). Threads
// and processes share the ids, and on a desktop most ids handed out are a
// browser's or a runtime's threads: a table that saw the listing at from
// has nothing new to list when none of them is a process. An id that no
// longer exists costs one failed open; one that does, a read of its status.
func NewProcess(from, to int) (found, known bool) {
	return newProcessIn(from, to, MaxNewProbe, isProcess)
}

// isProcess tells whether id is a running process's own pid: its status's
// Tgid is itself (a thread's is its process's pid, and /proc/ID answers
// for a thread too, though it is not listed).
func isProcess(id int) bool {
	var buf [256]byte // Tgid is the status's fourth line: its head will do
	b, err := readHead(procPath(id, "status"), buf[:])
	if err != nil {
		return false
	}
	tgid, ok := statusField(b, "Tgid:")
	return ok && tgid == id
}

// statusField reads a number field of a /proc/PID/status text.
func statusField(b []byte, name string) (int, bool) {
	i := bytes.Index(b, []byte("\n"+name))
	if i < 0 {
		return 0, false
	}
	rest := b[i+1+len(name):]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(rest)))
	return n, err == nil
}
