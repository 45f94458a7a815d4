package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/textsafe"
	"github.com/session-supervisor/session-supervisor/sessions/view"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
)

// resolveDataDir returns --data-dir when given, else the default data directory.
func (c *cli) resolveDataDir() (string, error) {
	if c.dataDir != "" {
		return c.dataDir, nil
	}
	dir, err := storage.DataDir()
	if err != nil {
		return "", fmt.Errorf("finding the data directory: %w", err)
	}
	return dir, nil
}

// openStore opens the database in the data directory, creating both if needed.
func (c *cli) openStore() (*storage.Store, error) {
	dir, err := c.resolveDataDir()
	if err != nil {
		return nil, err
	}
	if err := storage.EnsureDir(dir); err != nil {
		return nil, err
	}
	st, err := storage.Open(dir)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func cmdSettings(c *cli, args []string) error {
	if len(args) == 0 {
		return usagef("settings needs a subcommand: list, get, set or reset")
	}
	sub, args := args[0], args[1:]
	fs := c.newFlags("settings " + sub)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	want := map[string]int{"list": 0, "get": 1, "set": 2, "reset": 1}
	n, ok := want[sub]
	if !ok {
		return usagef("unknown settings subcommand %q", sub)
	}
	if len(pos) != n {
		return usagef("settings %s takes %d argument(s), got %d", sub, n, len(pos))
	}
	st, err := c.openStore()
	if err != nil {
		return err
	}
	defer st.Close()
	ctx := context.Background()
	// Reads come from the database: the app persists every change before
	// it applies it, and reads it through the same rules.
	svc, err := settings.NewService(ctx, settingsRegistry, st)
	if err != nil {
		return err
	}

	switch sub {
	case "list":
		vals := svc.List()
		if *asJSON {
			return writeJSON(c, vals)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KEY\tVALUE\tDEFAULT\tDESCRIPTION")
		for _, v := range vals {
			mark := ""
			if !v.IsDefault {
				mark = " *"
			}
			fmt.Fprintf(tw, "%s\t%s%s\t%s\t%s\n", v.Key, v.Value, mark, v.Default, v.Description)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, v := range vals {
			if v.Note != "" {
				fmt.Fprintf(c.stdout, "note: %s: %s\n", v.Key, v.Note)
			}
		}
		return nil
	case "get":
		v, err := svc.Value(pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintln(c.stdout, v.Value)
	case "set":
		res, err := c.changeSetting(svc, pos[0], &pos[1])
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s = %s", res.Key, res.Value)
		if res.Clamped {
			line += fmt.Sprintf(" (clamped from %s to the allowed range)", strings.TrimSpace(res.Requested))
		}
		printSetResult(c, line, res)
	case "reset":
		res, err := c.changeSetting(svc, pos[0], nil)
		if err != nil {
			return err
		}
		printSetResult(c, fmt.Sprintf("%s = %s (default)", res.Key, res.Value), res)
	}
	return nil
}

// changeSetting sets key to *raw (reset when raw is nil) through the
// running app's settings service, so the app applies it at once; when no
// app runs, through a service over the database directly.
func (c *cli) changeSetting(local *settings.Service, key string, raw *string) (settings.SetResult, error) {
	cl, err := c.client()
	if err != nil {
		return settings.SetResult{}, err
	}
	ctx, cancel := requestContext()
	defer cancel()
	var res settings.SetResult
	if raw != nil {
		res, err = cl.SetSetting(ctx, key, *raw)
	} else {
		res, err = cl.ResetSetting(ctx, key)
	}
	if !errors.Is(err, localapi.ErrNotRunning) {
		return res, err
	}
	if raw != nil {
		return local.Update(ctx, key, *raw)
	}
	return local.Reset(ctx, key)
}

// printSetResult prints a change's first line, then, when a cross-key rule
// keeps another value in force, what is in force and why.
func printSetResult(c *cli, line string, res settings.SetResult) {
	fmt.Fprintln(c.stdout, line)
	if res.InForce != "" {
		fmt.Fprintf(c.stdout, "in force: %s (%s)\n", res.InForce, res.Note)
	}
}

func cmdTimeline(c *cli, args []string) error {
	fs := c.newFlags("timeline")
	asJSON := fs.Bool("json", false, "print JSON")
	limit := fs.Int("limit", 0, "show at most N events (newest)")
	id, err := parseSessionID(fs, args)
	if err != nil {
		return err
	}
	if *limit < 0 {
		return usagef("--limit must be 0 (all) or more, got %d", *limit)
	}
	st, err := c.openStore()
	if err != nil {
		return err
	}
	defer st.Close()
	ctx := context.Background()
	s, err := st.FindSession(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		// A session forgotten with its timeline kept: the rows remain,
		// found by the full id `forget` printed.
		if kept, terr := st.Timeline(ctx, id, 1); terr == nil && len(kept) > 0 {
			s, err = sessions.Session{ID: id}, nil
		}
	}
	if err != nil {
		return err
	}
	events, err := st.Timeline(ctx, s.ID, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		rows := make([]localapi.TimelineRow, len(events))
		for i, e := range events {
			rows[i] = toTimelineRow(e)
		}
		return writeJSON(c, rows)
	}
	printTimeline(c, s.DisplayName(), events)
	return nil
}

// toTimelineRow is a row as `timeline --json` prints it, the documented
// JSON contract (the README's "JSON output" section): the local API's row
// (the same type, so the same keys), its detail never empty.
func toTimelineRow(e storage.TimelineEvent) localapi.TimelineRow {
	if len(e.Detail) == 0 {
		e.Detail = json.RawMessage("{}")
	}
	return e
}

// printTimeline prints events oldest first (they arrive newest first), one
// line each in the window's words (sessions/view): time, turn, kind, detail.
func printTimeline(c *cli, name string, events []storage.TimelineEvent) {
	if len(events) == 0 {
		fmt.Fprintf(c.human(), "%s: no timeline events yet\n", name)
		return
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tTURN\tKIND\tDETAIL")
	cells := textsafe.NewWriter(tw) // cleaned before the columns are measured
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		fmt.Fprintf(cells, "%s\t%d\t%s\t%s\n", e.Time.Local().Format("2006-01-02 15:04:05"), e.TurnGeneration, view.KindLabel(e.Kind), view.TimelineDetail(e.Detail))
	}
	tw.Flush()
}

func writeJSON(c *cli, v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
