package agentkit

import (
	"fmt"
	"os/exec"
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
