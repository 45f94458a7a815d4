// Package pipeio holds what every agent adapter needs around its process's
// pipes: a bounded write to its stdin, and the last few KB of its stderr.
package pipeio

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// WriteLine writes line to stdin (the write end of an os.Pipe: only an
// *os.File pipe takes a deadline), giving up after timeout (0: never). When
// the deadline passes part of the line may already be in the pipe, so
// nothing written after it could be read as intended: the input is closed
// and broken is true. The caller holds its own lock over stdin.
func WriteLine(stdin *os.File, line []byte, timeout time.Duration, agent string) (broken bool, err error) {
	if timeout > 0 {
		if err := stdin.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
			return false, fmt.Errorf("setting a deadline on %s's stdin: %w", agent, err)
		}
	}
	if _, err := stdin.Write(line); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			_ = stdin.Close()
			broken = true
		}
		return broken, fmt.Errorf("writing to %s's stdin: %w", agent, err)
	}
	return false, nil
}

// Ring keeps the last Max bytes written (an agent's stderr, for
// diagnostics only: never persisted or shown whole).
type Ring struct {
	Max int

	mu  sync.Mutex
	buf []byte
}

func (r *Ring) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, b...)
	if over := len(r.buf) - r.Max; over > 0 {
		r.buf = append(r.buf[:0], r.buf[over:]...)
	}
	return len(b), nil
}

func (r *Ring) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.buf)
}

// ErrInputClosed is what a write to an agent's closed input returns.
var ErrInputClosed = errors.New("the agent's input is closed")

// Input is an agent process's stdin for line-based protocols: each line is
// written whole under its own lock with WriteLine's deadline, a write that
// broke the pipe closes it, and Close closes it once. Adapters share it so
// the "closed once, never written after" rule lives in one place.
type Input struct {
	agent   string
	timeout time.Duration

	mu     sync.Mutex
	f      *os.File
	closed bool
}

// NewInput wraps f (the write end of an os.Pipe) for agent, bounding each
// write by timeout (0: no bound).
func NewInput(f *os.File, timeout time.Duration, agent string) *Input {
	return &Input{agent: agent, timeout: timeout, f: f}
}

// WriteLine writes one line; after Close, or after a write that timed out,
// it returns ErrInputClosed.
func (in *Input) WriteLine(line []byte) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return ErrInputClosed
	}
	broken, err := WriteLine(in.f, line, in.timeout, in.agent)
	if broken {
		in.closed = true
	}
	return err
}

// Close closes the input once; later calls do nothing.
func (in *Input) Close() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return nil
	}
	in.closed = true
	return in.f.Close()
}
