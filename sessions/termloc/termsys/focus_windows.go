//go:build windows

package termsys

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/session-supervisor/session-supervisor/sessions/termloc"
)

// Locate says which window shows the console of process pid: the first of
// its ancestors owning a visible top-level window (termloc.ConsoleHolder:
// the shell a classic console lends its window to, or Windows Terminal).
// Windows has no tty; the location names the window's process.
func Locate(ctx context.Context, pid int) (*termloc.Location, error) {
	procs, err := processes()
	if err != nil {
		return nil, fmt.Errorf("locating the console of pid %d: %w", pid, err)
	}
	self, ok := procs[pid]
	if !ok {
		return nil, fmt.Errorf("locating the console of pid %d: %w", pid, ErrGone)
	}
	var chain []termloc.Stat
	seen := map[int]bool{pid: true}
	for p := self.PPID; p > 0 && !seen[p] && len(chain) < maxDepth; p = procs[p].PPID {
		st, ok := procs[p]
		if !ok {
			break // a parent that exited: Windows does not reparent
		}
		seen[p] = true
		chain = append(chain, st)
	}
	owners := windowOwners()
	holder := termloc.ConsoleHolder(chain, func(p int) bool { return owners[p] != 0 })
	if holder == nil {
		return &termloc.Location{Kind: termloc.KindNone}, nil
	}
	return &termloc.Location{Kind: termloc.KindEmulator, TTY: "console", Holder: holder}, nil
}

// maxDepth bounds the walk up the parent links (pids are reused on
// Windows: a loop must not spin).
const maxDepth = 64

// processes is a Toolhelp snapshot of every process: parent and name.
func processes() (map[int]termloc.Stat, error) {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil, fmt.Errorf("listing the processes: %w", err)
	}
	defer windows.CloseHandle(snap)
	out := map[int]termloc.Stat{}
	var e windows.ProcessEntry32
	e.Size = uint32(unsafe.Sizeof(e))
	for err = windows.Process32First(snap, &e); err == nil; err = windows.Process32Next(snap, &e) {
		out[int(e.ProcessID)] = termloc.Stat{PID: int(e.ProcessID), PPID: int(e.ParentProcessID), Comm: windows.UTF16ToString(e.ExeFile[:])}
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return nil, fmt.Errorf("listing the processes: %w", err)
	}
	return out, nil
}

// windowOwners is each process's first visible top-level window.
func windowOwners() map[int]windows.HWND {
	owners := map[int]windows.HWND{}
	cb := syscall.NewCallback(func(h windows.HWND, _ uintptr) uintptr {
		if windows.IsWindowVisible(h) {
			var pid uint32
			if _, err := windows.GetWindowThreadProcessId(h, &pid); err == nil && owners[int(pid)] == 0 {
				owners[int(pid)] = h
			}
		}
		return 1 // go on
	})
	_ = windows.EnumWindows(cb, nil)
	return owners
}

var (
	user32                  = windows.NewLazySystemDLL("user32.dll")
	procSetForegroundWindow = user32.NewProc("SetForegroundWindow")
	procShowWindow          = user32.NewProc("ShowWindow")
	procIsIconic            = user32.NewProc("IsIconic")
)

// swRestore is ShowWindow's SW_RESTORE: a minimised window comes back.
const swRestore = 9

// raiseWindow restores and brings forward the visible window of the
// step's process. Windows grants the foreground only to a process the
// user just used (a click on the tray or a notification is one);
// refused, it says so. Windows Terminal's tab is not selected: it has no
// interface for that.
func raiseWindow(ctx context.Context, s termloc.Step) error {
	h := windowOwners()[s.PID]
	if h == 0 {
		return fmt.Errorf("no visible window of %s (pid %d)", s.Name, s.PID)
	}
	if iconic, _, _ := procIsIconic.Call(uintptr(h)); iconic != 0 {
		procShowWindow.Call(uintptr(h), swRestore)
	}
	if ok, _, err := procSetForegroundWindow.Call(uintptr(h)); ok == 0 {
		return fmt.Errorf("the %s window was not let come forward (Windows lets only the app the user last used do that): %v", s.Name, err)
	}
	return nil
}
