//go:build measure && unix

// This file is a capturing tool, not a test: it is built only with
// `-tags measure`, so the suite never counts it as skipped.
package opencode

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/opencode/fakeapi"
)

// TestMeasureEvents writes the raw event stream `opencode serve` sends for a
// scenario (MEASURE=scenario; INTERRUPT=1 aborts the turn after its first
// words) to testdata/MEASURE.sse, without the catalogue noise
// (plugin.added, catalog.updated) a start sends.
func TestMeasureEvents(t *testing.T) {
	sc := os.Getenv("MEASURE")
	if sc == "" {
		t.Fatal("set MEASURE=scenario (the scenario to capture)")
	}
	w := newRealWorld(t, fakeapi.Config{})
	var raw bytes.Buffer
	tap = func(r io.Reader) io.Reader { return io.TeeReader(r, &raw) }
	defer func() { tap = nil }()
	p := w.start(t, ProcessOptions{})
	p.until("the session", kindIs(sessions.EvSessionInit))
	if err := p.SendPrompt("[[scenario:" + sc + "]] go"); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("INTERRUPT") != "" {
		p.until("the first words", func(e sessions.Event) bool { return e.Detail == "writing a reply" })
		if err := p.Interrupt(); err != nil {
			t.Fatal(err)
		}
	}
	p.until("the turn's end", turnEnd)
	time.Sleep(500 * time.Millisecond)
	var keep []string
	for _, ev := range strings.SplitAfter(raw.String(), "\n\n") {
		if strings.Contains(ev, `"plugin.added"`) || strings.Contains(ev, `"catalog.updated"`) {
			continue
		}
		keep = append(keep, ev)
	}
	name := sc
	if os.Getenv("INTERRUPT") != "" {
		name += "_interrupted"
	}
	if err := os.WriteFile("testdata/"+name+".sse", []byte(strings.Join(keep, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("events: %s", kinds(p.got))
}
