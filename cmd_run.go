package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/supervisor"
)

func cmdRun(c *cli, args []string) error {
	fs := c.newFlags("run")
	headless := fs.Bool("headless", false, "run without the GUI")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("run takes no arguments")
	}
	_ = headless // the GUI arrives with the desktop app; until then run is headless

	dir, err := c.resolveDataDir()
	if err != nil {
		return err
	}
	if err := storage.EnsureDir(dir); err != nil {
		return err
	}
	lock, err := supervisor.AcquireLock(dir)
	if err != nil {
		return err
	}
	defer lock.Release()

	st, err := storage.Open(dir)
	if err != nil {
		return err
	}
	defer st.Close()

	log := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	rt := supervisor.New(supervisor.Options{
		Store:  st,
		Agents: agents(),
		Logger: log,
	})
	ctx := context.Background()
	if err := rt.Boot(ctx); err != nil {
		return err
	}
	api, err := supervisor.Listen(rt, st, dir, version)
	if err != nil {
		return err
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- api.Serve() }()

	loopCtx, stopLoop := context.WithCancel(ctx)
	loopDone := make(chan struct{})
	go func() { rt.Run(loopCtx); close(loopDone) }()

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	log.Info("session supervisor running", "data_dir", dir, "pid", os.Getpid(), "version", version)
	fmt.Fprintf(c.stderr, "Session Supervisor is running (data directory %s). Ctrl-C quits.\n", dir)

	select {
	case <-sigs:
	case <-c.interrupt:
	case err := <-serveErr:
		stopLoop()
		<-loopDone
		return err
	}
	// Graceful quit: stop deciding, stop serving, let every turn in flight
	// finish. A second Ctrl-C stops waiting.
	stopLoop()
	<-loopDone
	api.Close()
	fmt.Fprintln(c.stderr, "Quitting: letting turns in flight finish (Ctrl-C again to stop now)…")
	shutCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-shutCtx.Done():
		}
	}()
	if err := rt.Shutdown(shutCtx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
