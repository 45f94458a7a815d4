package claude

import (
	"fmt"
	"regexp"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// LaunchOptions are the per-session choices for a managed Claude Code process.
type LaunchOptions struct {
	// PermissionMode is passed as --permission-mode (default, acceptEdits,
	// plan, bypassPermissions, …); empty leaves the CLI's own default.
	PermissionMode string
	// ResumeID continues an existing Claude session (--resume).
	ResumeID string
	// IncludePartialMessages streams message deltas as stream_event lines,
	// so a long reply shows activity before it completes.
	IncludePartialMessages bool
}

var (
	// Claude's modes are camelCase words; the check keeps a value from being
	// read as another flag.
	permissionModeRE = regexp.MustCompile(`^[A-Za-z]{1,40}$`)
	// Claude session ids are UUIDs; allow any id-like token but never a
	// leading dash.
	resumeIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)
)

// Validate reports options Args would pass through unsafely.
func (o LaunchOptions) Validate() error {
	if o.PermissionMode != "" && !permissionModeRE.MatchString(o.PermissionMode) {
		return fmt.Errorf("claude launch options: invalid permission mode %q", agentkit.Clip(o.PermissionMode))
	}
	if o.ResumeID != "" && !resumeIDRE.MatchString(o.ResumeID) {
		return fmt.Errorf("claude launch options: invalid resume session id %q", agentkit.Clip(o.ResumeID))
	}
	return nil
}

// Args is the command line (after the program name) for a managed session:
// headless, stream-json both ways, every event on stdout (--verbose is
// required with stream-json output), and permission prompts on stdio so the
// supervisor sees and answers them. Call Validate first.
func Args(opts LaunchOptions) []string {
	args := []string{
		"-p",
		"--input-format", "stream-json",
		"--output-format", "stream-json",
		"--verbose",
		"--permission-prompt-tool", "stdio",
	}
	if opts.IncludePartialMessages {
		args = append(args, "--include-partial-messages")
	}
	if opts.PermissionMode != "" {
		args = append(args, "--permission-mode", opts.PermissionMode)
	}
	if opts.ResumeID != "" {
		args = append(args, "--resume", opts.ResumeID)
	}
	return args
}
