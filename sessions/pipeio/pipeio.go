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
