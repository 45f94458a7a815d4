package main

import (
	"fmt"

	"github.com/session-supervisor/session-supervisor/localapi"
)

// notifyCommands are the push channels' commands.
func notifyCommands() []command {
	return []command{
		{"notify", "test [CHANNEL...] [--json]", "send a sample through the push channels (every configured one, or those named: ntfy, webhook) and say how each went", cmdNotify},
	}
}

func cmdNotify(c *cli, args []string) error {
	if len(args) == 0 || args[0] != "test" {
		return usagef("notify needs a subcommand: test")
	}
	fs := c.newFlags("notify test")
	asJSON := fs.Bool("json", false, "print JSON")
	channels, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := requestContext()
	defer cancel()
	receipts, err := cl.NotifyTest(ctx, channels...)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c, receipts)
	}
	failed := 0
	for _, r := range receipts {
		switch {
		case r.OK:
			fmt.Fprintf(c.stdout, "%s: sent (HTTP %d)\n", r.Channel, r.Status)
		default:
			failed++
			fmt.Fprintf(c.stdout, "%s: failed: %s\n", r.Channel, pushError(r))
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d push channels failed the test", failed, len(receipts))
	}
	return nil
}

// pushError words a failed receipt.
func pushError(r localapi.PushReceipt) string {
	if r.Error != "" {
		return r.Error
	}
	return fmt.Sprintf("HTTP %d", r.Status)
}
