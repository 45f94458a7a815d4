package fakeapi

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions/fakeserver"
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
	return fakeserver.Env(home, proxyURL,
		"GEMINI_API_KEY=fake-key",
		"GOOGLE_GEMINI_BASE_URL="+baseURL,
		"GEMINI_CLI_TRUST_WORKSPACE=true",
		"NO_COLOR=1",
	)
}

// StartRefusingProxy starts an HTTP proxy on 127.0.0.1 that refuses every
// request (CONNECT included) with 403, so a CLI that tries to reach another
// host (measured: play.googleapis.com for usage statistics when they are
// on) fails fast instead of leaving the machine.
func StartRefusingProxy() (url string, closeFn func(), err error) {
	return fakeserver.StartRefusingProxy("gemini fakeapi", nil)
}

// GeminiBinary finds the real Gemini CLI for an end-to-end test:
// $GEMINI_BIN, else the copy `make test` installs under the module root.
// Without it the test fails when E2E_REQUIRED or CI is set and skips
// otherwise.
func GeminiBinary(t testing.TB) string { t.Helper(); return fakeserver.Binary(t, geminiCLI) }

// geminiCLI is the pinned CLI the tests run.
var geminiCLI = fakeserver.CLI{Title: "Gemini CLI", Env: "GEMINI_BIN", Dir: "gemini", Bin: "gemini",
	Package: "@google/gemini-cli", Version: GeminiVersion}
