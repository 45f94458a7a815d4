//go:build windows

package packaging

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"sync/atomic"
	"time"

	"github.com/kardianos/service"
	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
	"golang.org/x/sys/windows/svc/mgr"
)

// runKey is the per-user logon key the tray entry is written to, and
// runValue its value name.
const (
	runKey   = `Software\Microsoft\Windows\CurrentVersion\Run`
	runValue = DisplayName
)

// windowsManager installs the service through kardianos/service and the
// tray's logon entry in the user's registry. Compile-checked by the
// cross-build in `make test`; it has not run on Windows in CI.
type windowsManager struct {
	spec Spec
}

func newWindowsManager(spec Spec) (Manager, error) {
	return &windowsManager{spec: spec}, nil
}

func (m *windowsManager) Kind() string { return "Windows service" }

func (m *windowsManager) UnitPath() string {
	return `HKLM\SYSTEM\CurrentControlSet\Services\` + Name
}

func (m *windowsManager) kardianos(account, password string) (service.Service, error) {
	s, err := service.New(idleProgram{}, windowsServiceConfig(m.spec, account, password))
	if err != nil {
		return nil, fmt.Errorf("preparing the Windows service: %w", err)
	}
	return s, nil
}

func (m *windowsManager) Install(ctx context.Context) (InstallResult, error) {
	res := InstallResult{Path: m.UnitPath()}
	if err := m.spec.Validate(); err != nil {
		return res, err
	}
	u, err := user.Current()
	if err != nil {
		return res, fmt.Errorf("finding the current user: %w", err)
	}
	password := os.Getenv(EnvServicePassword)
	cfg := windowsServiceConfig(m.spec, u.Username, password)
	want := windowsCommandLine(append([]string{cfg.Executable}, cfg.Arguments...))

	sm, err := mgr.Connect()
	if err != nil {
		return res, elevationProblem("connecting to the service control manager", err)
	}
	defer sm.Disconnect()
	if s, err := sm.OpenService(Name); err == nil {
		// Installed: rewrite the command line if the binary or the data
		// directory changed, else leave it be.
		defer s.Close()
		c, err := s.Config()
		if err != nil {
			return res, fmt.Errorf("reading the service's configuration: %w", err)
		}
		res.Change = Unchanged
		if c.BinaryPathName != want {
			c.BinaryPathName = want
			if err := s.UpdateConfig(c); err != nil {
				return res, elevationProblem("updating the service", err)
			}
			res.Change = Updated
		}
	} else {
		if password == "" {
			return res, &Problem{
				What: "the service runs as you (" + u.Username + "), so that the agents have your files and credentials, and Windows needs your password to start it",
				Fix:  "in an elevated prompt: set " + EnvServicePassword + "=<your Windows password> && session-supervisor service install",
			}
		}
		s, err := m.kardianos(u.Username, password)
		if err != nil {
			return res, err
		}
		if err := s.Install(); err != nil {
			return res, elevationProblem("installing the service", err)
		}
		res.Change = Created
	}
	k, _, err := registry.CreateKey(registry.CURRENT_USER, runKey, registry.SET_VALUE)
	if err != nil {
		return res, fmt.Errorf("opening HKCU\\%s: %w", runKey, err)
	}
	defer k.Close()
	if err := k.SetStringValue(runValue, TrayLogonCommand(m.spec)); err != nil {
		return res, fmt.Errorf("writing the logon entry HKCU\\%s\\%s: %w", runKey, runValue, err)
	}
	res.Enabled = true
	if st, err := m.Status(ctx); err == nil {
		res.Running = st.State == StateRunning
	}
	return res, nil
}

func (m *windowsManager) Uninstall(ctx context.Context) (UninstallResult, error) {
	var res UninstallResult
	s, err := m.kardianos("", "")
	if err != nil {
		return res, err
	}
	if st, err := s.Status(); err == nil || !errors.Is(err, service.ErrNotInstalled) {
		if st == service.StatusRunning {
			if err := s.Stop(); err != nil {
				res.Note = "could not stop the service first: " + err.Error()
			}
		}
		if err := s.Uninstall(); err != nil {
			return res, elevationProblem("removing the service", err)
		}
		res.Removed = append(res.Removed, m.UnitPath())
	}
	k, err := registry.OpenKey(registry.CURRENT_USER, runKey, registry.QUERY_VALUE|registry.SET_VALUE)
	if err == nil {
		defer k.Close()
		// Only our own entry: a value of that name pointing elsewhere is
		// not what install wrote.
		if v, _, err := k.GetStringValue(runValue); err == nil && v == TrayLogonCommand(m.spec) {
			if err := k.DeleteValue(runValue); err != nil {
				return res, fmt.Errorf("removing the logon entry: %w", err)
			}
			res.Removed = append(res.Removed, `HKCU\`+runKey+`\`+runValue)
		}
	}
	return res, nil
}

func (m *windowsManager) Start(context.Context) error {
	return m.control(func(s service.Service) error { return s.Start() }, "start")
}

func (m *windowsManager) Stop(context.Context) error {
	return m.control(func(s service.Service) error { return s.Stop() }, "stop")
}

func (m *windowsManager) Restart(context.Context) error {
	return m.control(func(s service.Service) error { return s.Restart() }, "restart")
}

func (m *windowsManager) control(fn func(service.Service) error, verb string) error {
	s, err := m.kardianos("", "")
	if err != nil {
		return err
	}
	if _, err := s.Status(); errors.Is(err, service.ErrNotInstalled) {
		return notInstalled(m.UnitPath())
	}
	if err := fn(s); err != nil {
		return elevationProblem("could not "+verb+" the service", err)
	}
	return nil
}

func (m *windowsManager) Status(context.Context) (Status, error) {
	st := Status{Kind: m.Kind(), UnitPath: m.UnitPath(), State: StateNotInstalled}
	s, err := m.kardianos("", "")
	if err != nil {
		return st, err
	}
	state, err := s.Status()
	switch {
	case errors.Is(err, service.ErrNotInstalled):
		return st, nil
	case err != nil:
		st.Installed, st.State, st.Problem = true, StateUnknown, asProblem(err)
		return st, nil
	}
	st.Installed = true
	switch state {
	case service.StatusRunning:
		st.State = StateRunning
	case service.StatusStopped:
		st.State = StateStopped
	default:
		st.State = StateUnknown
	}
	if sm, err := mgr.Connect(); err == nil {
		defer sm.Disconnect()
		if svc, err := sm.OpenService(Name); err == nil {
			defer svc.Close()
			if c, err := svc.Config(); err == nil {
				cfg := windowsServiceConfig(m.spec, "", "")
				st.Command = c.BinaryPathName
				st.Current = c.BinaryPathName == windowsCommandLine(append([]string{cfg.Executable}, cfg.Arguments...))
				st.Enabled = c.StartType == mgr.StartAutomatic
			}
		}
	}
	return st, nil
}

// elevationProblem explains access denied: managing services needs an
// elevated prompt.
func elevationProblem(what string, err error) error {
	if errors.Is(err, windows.ERROR_ACCESS_DENIED) || errors.Is(err, os.ErrPermission) {
		return &Problem{What: what, Err: err, Fix: "run the command from an elevated prompt (Run as administrator)"}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// idleProgram is the kardianos program for managing the service from the
// CLI, where Start and Stop are never called.
type idleProgram struct{}

func (idleProgram) Start(service.Service) error { return nil }
func (idleProgram) Stop(service.Service) error  { return nil }

// underWindowsService reports whether the service control manager started
// this process.
func underWindowsService() bool { return !service.Interactive() }

// RunWindowsService hands the process to the service control manager and
// runs app until the manager stops the service. app's stop channel is
// closed on Stop or Shutdown.
func RunWindowsService(app func(stop <-chan struct{}) error) error {
	p := &serviceProgram{app: app, stop: make(chan struct{}), done: make(chan error, 1)}
	s, err := service.New(p, &service.Config{Name: Name})
	if err != nil {
		return fmt.Errorf("preparing the Windows service: %w", err)
	}
	if err := s.Run(); err != nil {
		return fmt.Errorf("running as a Windows service: %w", err)
	}
	return p.err
}

type serviceProgram struct {
	app      func(stop <-chan struct{}) error
	stop     chan struct{}
	done     chan error
	stopping atomic.Bool
	err      error
}

func (p *serviceProgram) Start(service.Service) error {
	go func() {
		err := p.app(p.stop)
		if !p.stopping.Load() {
			// The app ended on its own (a fatal error): exit non-zero so
			// the service control manager counts a failure and restarts
			// it, instead of showing a service that runs but does nothing.
			fmt.Fprintln(os.Stderr, "session-supervisor:", err)
			os.Exit(1)
		}
		p.done <- err
	}()
	return nil
}

func (p *serviceProgram) Stop(service.Service) error {
	p.stopping.Store(true)
	close(p.stop)
	select {
	case p.err = <-p.done:
	case <-time.After(StopGrace + 5*time.Second):
	}
	return nil
}
