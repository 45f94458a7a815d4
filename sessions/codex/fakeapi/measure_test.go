//go:build measure

// This file is a capturing tool, not a test: it is built only with
// `-tags measure`, so the suite never counts it as skipped.
package fakeapi

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMeasureAppServer prints what `codex app-server` writes for a scenario
// (MEASURE=scenario); it is a tool for capturing, skipped otherwise.
func TestMeasureAppServer(t *testing.T) {
	sc := os.Getenv("MEASURE")
	if sc == "" {
		t.Fatal("set MEASURE=scenario (the scenario to capture)")
	}
	bin := CodexBinary(t)
	api, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	proxy, stop, _ := StartRefusingProxy()
	defer stop()
	home := t.TempDir()
	ch := home + "/codex"
	if err := WriteConfig(ch, api.URL(), Config{ApprovalPolicy: os.Getenv("POLICY")}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "app-server")
	cmd.Env = HermeticEnv(home, ch, proxy)
	cmd.Dir = t.TempDir()
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	w := func(s string) { fmt.Println(">>", s); fmt.Fprintln(in, s) }
	start := time.Now()
	w(`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"session-supervisor","title":null,"version":"0"},"capabilities":null}}`)
	w(`{"method":"initialized"}`)
	w(`{"id":2,"method":"thread/start","params":{"cwd":"` + cmd.Dir + `"}}`)
	thread := ""
	for _, p := range strings.Split(sc, ",") {
		sent := false
		deadline := time.After(60 * time.Second)
	loop:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					break loop
				}
				fmt.Printf("%6.2fs << %s\n", time.Since(start).Seconds(), l)
				if thread == "" {
					if i := strings.Index(l, `"thread":{"id":"`); i >= 0 {
						thread = l[i+16 : i+16+strings.Index(l[i+16:], `"`)]
					}
				}
				if thread != "" && !sent {
					sent = true
					w(`{"id":3,"method":"turn/start","params":{"threadId":"` + thread + `","input":[{"type":"text","text":"[[scenario:` + p + `]] go","text_elements":[]}]}}`)
				}
				if strings.Contains(l, `"method":"item/commandExecution/requestApproval"`) {
					id := l[strings.Index(l, `"id":`)+5:]
					id = id[:strings.IndexAny(id, ",}")]
					w(`{"id":` + id + `,"result":{"decision":"accept"}}`)
				}
				if strings.Contains(l, `"method":"turn/completed"`) {
					break loop
				}
			case <-deadline:
				w(`{"id":9,"method":"turn/interrupt","params":{"threadId":"` + thread + `","turnId":"x"}}`)
				break loop
			}
		}
	}
	in.Close()
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	for _, e := range api.Log() {
		fmt.Printf("api: %+v\n", e)
	}
}
