// Package machines is the list of other machines whose supervisors this one
// reaches, and the way it reaches them: the system ssh running the app's
// stdio bridge (`session-supervisor dial-stdio`) on the far side, as Docker
// does for ssh:// hosts. Nothing listens on a network port and no
// credential is stored here: the user's keys, ~/.ssh/config, ProxyJump and
// agent do what they always do.
package machines

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FileName is the machines list in the data directory (owner-only).
const FileName = "machines.json"

// DefaultCommand is the app on a remote when a machine names none: the
// remote's PATH finds it.
const DefaultCommand = "session-supervisor"

// Machine is another machine the user runs agents on.
type Machine struct {
	Name string `json:"name"`
	// Host is what ssh is given: a name, an address or an alias from the
	// user's ~/.ssh/config.
	Host string `json:"host"`
	User string `json:"user,omitempty"`
	Port int    `json:"port,omitempty"`
	// Command runs the app on the remote (a path, and arguments such as
	// --data-dir); the remote's login shell reads it.
	Command string `json:"command,omitempty"`
	// LastSeen is when a client of this machine last had an answer.
	LastSeen time.Time `json:"last_seen,omitzero"`
}

// Target is the machine as the user typed it: [USER@]HOST[:PORT].
func (m Machine) Target() string {
	t := m.Host
	if strings.Contains(t, ":") {
		t = "[" + t + "]"
	}
	if m.User != "" {
		t = m.User + "@" + t
	}
	if m.Port != 0 {
		t += ":" + strconv.Itoa(m.Port)
	}
	return t
}

// RemoteCommand is the app's command line on the remote.
func (m Machine) RemoteCommand() string {
	if m.Command == "" {
		return DefaultCommand
	}
	return m.Command
}

// LocalName is the name of this machine in lists that show several: no
// machine may take it.
const LocalName = "local"

var validName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,62}$`)

// Parse checks a machine as `machines add NAME [USER@]HOST[:PORT]` gives it.
func Parse(name, target, command string) (Machine, error) {
	if !validName.MatchString(name) {
		return Machine{}, fmt.Errorf("machine name %q: use letters, digits, '.', '_' and '-' (at most 63)", name)
	}
	if name == LocalName {
		return Machine{}, fmt.Errorf("machine name %q is this machine's own", name)
	}
	m := Machine{Name: name, Command: strings.TrimSpace(command)}
	if user, host, ok := strings.Cut(target, "@"); ok {
		if user == "" || strings.ContainsAny(user, " \t/") {
			return Machine{}, fmt.Errorf("machine %s: %q is not a user name", name, user)
		}
		m.User, target = user, host
	}
	host, port, err := splitHostPort(target)
	if err != nil {
		return Machine{}, fmt.Errorf("machine %s: %w", name, err)
	}
	m.Host, m.Port = host, port
	return m, nil
}

// splitHostPort reads HOST, HOST:PORT, [V6] and [V6]:PORT.
func splitHostPort(s string) (string, int, error) {
	if s == "" {
		return "", 0, errors.New("no host given")
	}
	host, portText := s, ""
	switch {
	case strings.HasPrefix(s, "["):
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			if strings.HasSuffix(s, "]") {
				return strings.Trim(s, "[]"), 0, nil
			}
			return "", 0, fmt.Errorf("%q is not [ADDRESS] or [ADDRESS]:PORT", s)
		}
		host, portText = h, p
	case strings.Count(s, ":") == 1:
		host, portText, _ = strings.Cut(s, ":")
	}
	if host == "" || strings.HasPrefix(host, "-") || strings.ContainsAny(host, " \t/@") {
		return "", 0, fmt.Errorf("%q is not a host", host)
	}
	if portText == "" {
		return host, 0, nil
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("%q is not a port (1 to 65535)", portText)
	}
	return host, port, nil
}

// Load reads the machines list of a data directory; none yet is an empty list.
func Load(dataDir string) ([]Machine, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, FileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the machines list: %w", err)
	}
	var list []Machine
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("reading the machines list %s: %w (fix or remove the file)", filepath.Join(dataDir, FileName), err)
	}
	return list, nil
}

// Save writes the list whole (a temporary file renamed over it: a crash
// leaves the old list or the new one), owner-only.
func Save(dataDir string, list []Machine) error {
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dataDir, FileName+".*")
	if err != nil {
		return fmt.Errorf("saving the machines list: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("saving the machines list: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("saving the machines list: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dataDir, FileName)); err != nil {
		return fmt.Errorf("saving the machines list: %w", err)
	}
	return nil
}

// Add returns list with m added; a name already taken is an error.
func Add(list []Machine, m Machine) ([]Machine, error) {
	if _, ok := Find(list, m.Name); ok {
		return nil, fmt.Errorf("a machine named %s exists already (machines rm %s first)", m.Name, m.Name)
	}
	return append(slices.Clone(list), m), nil
}

// Remove returns list without the machine named name.
func Remove(list []Machine, name string) ([]Machine, error) {
	i := slices.IndexFunc(list, func(m Machine) bool { return m.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("no machine named %s (machines ls lists them)", name)
	}
	return slices.Delete(slices.Clone(list), i, i+1), nil
}

// Find returns the machine named name.
func Find(list []Machine, name string) (Machine, bool) {
	i := slices.IndexFunc(list, func(m Machine) bool { return m.Name == name })
	if i < 0 {
		return Machine{}, false
	}
	return list[i], true
}
