package fakeapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// GeminiVersion is the Gemini CLI release the end-to-end tests pin; the
// Makefile installs the same one.
const GeminiVersion = "0.61.0"

// Config are the choices a test makes about the CLI's settings.
type Config struct {
	// MaxAttempts is the CLI's own attempts per model request
	// (general.maxAttempts; 0: 2, so a failing scenario gives up in
	// seconds instead of the default 10 attempts with backoff up to 30 s).
	MaxAttempts int
}

// WriteSettings writes $home/.gemini/settings.json: API-key auth (no login
// prompt), the explicit model, no telemetry, no update check, and the
// CLI's retry budget. The CLI refuses settings in a directory others can
// write, so home is made private.
func WriteSettings(home string, c Config) error {
	attempts := c.MaxAttempts
	if attempts <= 0 {
		attempts = 2
	}
	settings := map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"model":    map[string]any{"name": Model},
		"general": map[string]any{"maxAttempts": attempts, "enableAutoUpdate": false,
			"enableAutoUpdateNotification": false},
		"privacy": map[string]any{"usageStatisticsEnabled": false},
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return fmt.Errorf("gemini fakeapi: %w", err)
	}
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("gemini fakeapi: %w", err)
	}
	if err := os.Chmod(home, 0o700); err != nil {
		return fmt.Errorf("gemini fakeapi: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), b, 0o600); err != nil {
		return fmt.Errorf("gemini fakeapi: writing settings.json: %w", err)
	}
	return nil
}

// HermeticEnv is the whole environment of a Gemini CLI run that keeps its
// state under home, authenticates with a dummy API key against the fake at
// baseURL, trusts the workspace without asking, and sends any other
// traffic to the refusing proxy at proxyURL ("" leaves the proxy out). Only
// PATH is inherited, for node and the commands the CLI runs.
func HermeticEnv(home, baseURL, proxyURL string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	env := []string{
		"PATH=" + path,
		"HOME=" + home,
		"GEMINI_API_KEY=fake-key",
		"GOOGLE_GEMINI_BASE_URL=" + baseURL,
		"GEMINI_CLI_TRUST_WORKSPACE=true",
		"NO_COLOR=1",
	}
	if proxyURL != "" {
		for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY", "all_proxy"} {
			env = append(env, k+"="+proxyURL)
		}
		for _, k := range []string{"NO_PROXY", "no_proxy"} {
			env = append(env, k+"=127.0.0.1,localhost")
		}
	}
	return env
}

// StartRefusingProxy starts an HTTP proxy on 127.0.0.1 that refuses every
// request (CONNECT included) with 403, so a CLI that tries to reach another
// host (measured: play.googleapis.com for usage statistics when they are
// on) fails fast instead of leaving the machine.
func StartRefusingProxy() (url string, closeFn func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("gemini fakeapi: proxy listen: %w", err)
	}
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "gemini fakeapi: test proxy refuses "+r.Method+" "+r.Host, http.StatusForbidden)
		}),
	}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// GeminiBinary finds the real Gemini CLI for an end-to-end test:
// $GEMINI_BIN, else the copy `make test` installs under the module root.
// Without it the test fails when E2E_REQUIRED or CI is set and skips
// otherwise.
func GeminiBinary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("GEMINI_BIN")
	if bin == "" {
		root, err := moduleRoot()
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(root, ".cache", "gemini", "node_modules", ".bin", "gemini")
	}
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("the real Gemini CLI is not at %s (%v); `make test` installs it "+
			"(npm install --prefix .cache/gemini @google/gemini-cli@%s), or set GEMINI_BIN", bin, err, GeminiVersion)
		if os.Getenv("E2E_REQUIRED") != "" || os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
