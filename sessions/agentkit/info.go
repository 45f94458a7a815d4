package agentkit

import (
	"fmt"
	"os/exec"
	"regexp"
)

// Info is what the agent registry knows of an agent (the answers of
// sessions.AgentInfo) and how its command is found.
type Info struct {
	// Name is the stable identifier stored with every session.
	Name string
	// Display is how people call the agent ("Claude Code").
	Display string
	// Command is the executable on PATH when the setting is empty.
	Command string
	// Install is the command that installs the CLI, for doctor.
	Install string
	// Setting is the agent's command setting (agents.NAME.command).
	Setting string
	// TerminalResume is what follows the command in a terminal to continue
	// the agent's own session id interactively ("Continue in terminal"),
	// given an id already checked by ResumeArgs; nil when the agent's
	// interactive CLI cannot be resumed that way.
	TerminalResume func(id string) []string
}

// resumeIDRE is what a session id handed to a terminal's resume may be: an
// agent's own ids (UUIDs, Codex's thread ids, OpenCode's ses_…) fit, and
// nothing that could read as an option (a leading dash) or a second word.
var resumeIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// ResumeArgs is the command line that continues the agent's session id in
// a terminal: command (i.Command when empty) and i.TerminalResume's
// arguments. An agent without one, or an id that is not one, is an error.
func (i Info) ResumeArgs(command, id string) ([]string, error) {
	if i.TerminalResume == nil {
		return nil, fmt.Errorf("%s sessions cannot be continued in a terminal", i.Display)
	}
	if !resumeIDRE.MatchString(id) {
		return nil, fmt.Errorf("%s session id %q cannot be resumed in a terminal", i.Display, Clip(id))
	}
	if command == "" {
		command = i.Command
	}
	return append([]string{command}, i.TerminalResume(id)...), nil
}

// LookPath resolves command (i.Command when empty) on PATH; the error for
// a missing one names the setting that points the app at it.
func (i Info) LookPath(command string) (string, error) {
	if command == "" {
		command = i.Command
	}
	path, err := exec.LookPath(command)
	if err != nil {
		return "", fmt.Errorf("the %s command %q was not found (install %s, or point the setting %s at it: session-supervisor settings set %s /path/to/%s): %w",
			i.Display, command, i.Display, i.Setting, i.Setting, i.Command, err)
	}
	return path, nil
}
