package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/session-supervisor/session-supervisor/doctor"
	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/machines"
	"github.com/session-supervisor/session-supervisor/packaging"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
)

// doctorAgents is the agent CLIs doctor looks for: every agent in the
// registry (the app launches each; each has its agents.NAME.command).
func doctorAgents() []doctor.Agent {
	var out []doctor.Agent
	for _, a := range agentRegistry.All() {
		out = append(out, doctor.Agent{Name: a.Name(), Command: a.DefaultCommand(), Setting: settings.AgentCommandKey(a.Name()),
			Display: a.DisplayName(), Managed: true, Install: a.InstallHint()})
	}
	return out
}

func cmdDoctor(c *cli, args []string) error {
	fs := c.newFlags("doctor")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	dir, err := c.resolveDataDir()
	if err != nil {
		return err
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	rep := doctor.Run(context.Background(), c.doctorProbes(dir), doctor.Options{
		Version:  version,
		DataDir:  dir,
		Socket:   filepath.Join(dir, localapi.SocketName),
		GOOS:     runtime.GOOS,
		Agents:   doctorAgents(),
		Hooks:    c.doctorHooks(),
		Machines: c.doctorMachines(dir),
	})
	if *asJSON {
		if err := writeJSON(c, rep); err != nil {
			return err
		}
	} else {
		doctor.Print(c.stdout, rep)
	}
	if failed, _ := rep.Counts(); failed > 0 {
		return fmt.Errorf("doctor: %d check(s) failed; the fix is printed under each", failed)
	}
	return nil
}

// doctorProbes wires doctor to this machine and this app's packages.
func (c *cli) doctorProbes(dir string) doctor.Probes {
	p := doctor.Real()
	p.OpenDatabase = func(dir string) (doctor.Database, error) {
		st, err := storage.Open(dir)
		if err != nil {
			return nil, err
		}
		return doctorDB{st}, nil
	}
	p.Health = doctor.SocketHealth(filepath.Join(dir, localapi.SocketName))
	p.Lock = func() (doctor.LockState, error) { return lockState(dir) }
	p.Service = c.serviceStatus
	return p
}

// doctorDB is the store as doctor reads it.
type doctorDB struct{ *storage.Store }

// UserSettings is the settings the user set, by key.
func (d doctorDB) UserSettings(ctx context.Context) (map[string]string, error) {
	vals, err := settingsRegistry.On(d.Store).ListSettings(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, s := range vals {
		if !s.IsDefault {
			out[s.Key] = s.Value
		}
	}
	return out, nil
}

// Quarantined is the stored sessions this build cannot read.
func (d doctorDB) Quarantined(ctx context.Context) ([]storage.Quarantined, error) {
	_, bad, err := d.LoadSessions(ctx)
	return bad, err
}

// lockState says whether another process holds the data directory. It
// looks only when a run has created the lock file: taking the lock would
// otherwise create it.
func lockState(dir string) (doctor.LockState, error) {
	if _, err := os.Stat(filepath.Join(dir, storage.LockName)); err != nil {
		return doctor.LockState{}, nil
	}
	lock, err := storage.AcquireLock(dir)
	var locked *storage.LockedError
	if errors.As(err, &locked) {
		return doctor.LockState{Held: true, PID: locked.PID}, nil
	}
	if err != nil {
		return doctor.LockState{}, err
	}
	lock.Release()
	return doctor.LockState{}, nil
}

// serviceStatus asks the service manager about the per-user service.
func (c *cli) serviceStatus(ctx context.Context) (packaging.Status, error) {
	spec, err := c.serviceSpec(false)
	if err != nil {
		return packaging.Status{}, fmt.Errorf("not checked: %w", err)
	}
	m, err := newServiceManager(spec)
	if err != nil {
		return packaging.Status{}, err
	}
	return m.Status(ctx)
}

// doctorMachines asks every other machine's supervisor (none configured:
// no check).
func (c *cli) doctorMachines(dir string) []doctor.Machine {
	list, err := machines.Load(dir)
	if err != nil {
		return []doctor.Machine{{Name: "list", Target: filepath.Join(dir, machines.FileName), Err: err.Error(), Fix: "fix or remove the file"}}
	}
	if len(list) == 0 {
		return nil
	}
	ssh, err := c.sshCommand()
	if err != nil {
		return []doctor.Machine{{Name: "list", Target: machines.SSHCommandSetting, Err: err.Error(), Fix: "session-supervisor settings reset " + machines.SSHCommandSetting}}
	}
	var out []doctor.Machine
	for _, r := range probeMachines(ssh, list) {
		out = append(out, doctor.Machine{Name: r.Name, Target: r.Target, Version: r.Version, Health: r.Health, Sessions: r.Sessions, Err: r.Error, Fix: r.Fix})
	}
	return out
}
