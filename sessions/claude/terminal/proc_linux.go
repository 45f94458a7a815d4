package terminal

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// probePID reads /proc/PID/stat: gone when missing or a zombie; field 22 is
// the start in clock ticks since boot, turned into a time with the boot
// time from /proc/stat (USER_HZ is 100 on every Linux the CLI runs on).
func probePID(pid int) procInfo {
	if pid <= 0 {
		return procInfo{}
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if os.IsNotExist(err) {
			return procInfo{state: procGone}
		}
		return procInfo{}
	}
	return parseStat(b, bootTime())
}

func parseStat(b []byte, boot time.Time) procInfo {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return procInfo{}
	}
	if s := f[0][0]; s == 'Z' || s == 'X' {
		return procInfo{state: procGone}
	}
	p := procInfo{state: procRunning, stamp: string(f[19])}
	if ticks, err := strconv.ParseInt(p.stamp, 10, 64); err == nil && !boot.IsZero() {
		p.started = boot.Add(time.Duration(ticks) * (time.Second / 100))
	}
	return p
}

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

// ListClaudeProcs reads the process table for interactive Claude Code CLIs
// of this user: every /proc/PID whose comm says claude (one small read per
// process; the rest only for those), then its command line, start and cwd.
// Another user's processes are skipped (their cwd cannot be read).
func ListClaudeProcs() ([]ClaudeProc, error) { return scanClaudeProcs(nil) }

// scanClaudeProcs is ListClaudeProcs; known, when set, is told every pid
// seen and whether it was a candidate, and may skip one (its remembered
// verdict still holds).
func scanClaudeProcs(known procMemo) ([]ClaudeProc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("reading the process table: %w", err)
	}
	boot := bootTime()
	self := os.Getpid()
	var out []ClaudeProc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if known != nil && known.skip(pid) {
			continue
		}
		dir := "/proc/" + e.Name()
		comm, err := os.ReadFile(dir + "/comm")
		if err != nil {
			continue
		}
		c := string(bytes.TrimSpace(comm))
		// A native CLI is named claude; an npm one runs under node (and
		// usually retitles itself claude).
		if c != "claude" && c != "claude.exe" && c != "node" && c != "bun" {
			if known != nil {
				known.notClaude(pid)
			}
			continue
		}
		raw, err := os.ReadFile(dir + "/cmdline")
		if err != nil {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if !interactiveClaude(c, argv) {
			continue
		}
		stat, err := os.ReadFile(dir + "/stat")
		if err != nil {
			continue
		}
		info := parseStat(stat, boot)
		if info.state != procRunning {
			continue
		}
		cwd, err := os.Readlink(dir + "/cwd")
		if err != nil {
			continue
		}
		env, err := os.ReadFile(dir + "/environ")
		if err != nil {
			continue
		}
		out = append(out, ClaudeProc{PID: pid, Cwd: cwd, Stamp: info.stamp, Started: info.started, ConfigDir: configDirOf(env)})
	}
	return out, nil
}

// procCwd is a process's working directory.
func procCwd(pid int) (string, error) { return os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd") }
