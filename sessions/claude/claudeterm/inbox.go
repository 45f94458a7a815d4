package claudeterm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// The inbox socket (cross-session messaging, Claude Code ≥ 2.1.224) is the
// only way into a session the app did not launch: nothing outside the
// terminal may type into it, and a SIGINT makes the interactive CLI exit.
// Measured on 2.1.328: after an auth line with the key file's token, one
// user frame starts a turn in an idle session ("next"), or aborts the turn
// in flight and runs at once ("now").

// inboxDeadline bounds one delivery: the CLI reads the socket at once.
const inboxDeadline = 5 * time.Second

// ErrNoInbox: the session offers no inbox socket (an older CLI, or
// messaging is off).
var ErrNoInbox = errors.New("the session has no inbox socket")

// CanNudge reports whether the session has an inbox socket and its key.
func (s *Source) CanNudge(es sessions.ExternalSession) bool {
	f, ok := s.sessionFile(es)
	if !ok || f.MessagingSocketPath == "" {
		return false
	}
	_, err := s.peerToken(f)
	return err == nil
}

// peerToken reads the session's key file, <pid>.<sha256 of the socket
// path>.key beside its session file (any <pid>.*.key when that one is
// missing: the name's hash is reverse-engineered, not documented).
func (s *Source) peerToken(f SessionFile) (string, error) {
	sum := sha256.Sum256([]byte(f.MessagingSocketPath))
	dir := s.SessionsDir()
	paths := []string{filepath.Join(dir, fmt.Sprintf("%d.%s.key", f.PID, hex.EncodeToString(sum[:])))}
	if m, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("%d.*.key", f.PID))); len(m) > 0 {
		paths = append(paths, m...)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var k struct {
			PeerToken string `json:"peerToken"`
		}
		if json.Unmarshal(b, &k) == nil && k.PeerToken != "" {
			return k.PeerToken, nil
		}
	}
	return "", fmt.Errorf("no key file for process %d", f.PID)
}

// Nudge writes the auth line and one user frame to the session's inbox.
func (s *Source) Nudge(ctx context.Context, es sessions.ExternalSession, text string, urgent bool) error {
	f, ok := s.sessionFile(es)
	if !ok {
		return fmt.Errorf("session %s is gone", es.Key)
	}
	if f.MessagingSocketPath == "" {
		return ErrNoInbox
	}
	token, err := s.peerToken(f)
	if err != nil {
		return fmt.Errorf("nudging process %d: %w", f.PID, err)
	}
	return SendInbox(ctx, f.MessagingSocketPath, token, text, urgent)
}

// SendInbox delivers one frame: the auth line, then the user frame.
// Nothing is written back by the CLI.
func SendInbox(ctx context.Context, socket, token, text string, urgent bool) error {
	if err := checkInboxSocket(socket); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, inboxDeadline)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return fmt.Errorf("connecting to the inbox socket: %w", err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	priority := "next"
	if urgent {
		priority = "now"
	}
	auth, _ := json.Marshal(map[string]string{"type": "auth", "token": token})
	frame, err := json.Marshal(map[string]any{
		"type": "user", "msgV": 1, "msg_id": sessions.NewUUID(), "from": "uds:session-supervisor", "priority": priority,
		"message": map[string]string{"role": "user", "content": text},
	})
	if err != nil {
		return fmt.Errorf("encoding the inbox frame: %w", err)
	}
	msg := append(append(append(auth, '\n'), frame...), '\n')
	if _, err := conn.Write(msg); err != nil {
		return fmt.Errorf("writing to the inbox socket: %w", err)
	}
	return nil
}
