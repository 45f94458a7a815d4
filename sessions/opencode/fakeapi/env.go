package fakeapi

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions/fakeserver"
)

// OpenCodeVersion is the OpenCode release the end-to-end tests pin; the
// Makefile installs the same one.
const OpenCodeVersion = "1.18.33"

// Config are the choices a test makes about OpenCode's config.
type Config struct {
	// Permission is OpenCode's "permission" setting (nil: its defaults,
	// which run bash and edits without asking); {"bash": "ask"} makes a
	// command wait for the app's answer.
	Permission map[string]string
}

// ConfigPath is where WriteConfig puts the config under home (given to
// OpenCode as OPENCODE_CONFIG).
func ConfigPath(home string) string { return filepath.Join(home, "opencode-test.json") }

// WriteConfig writes OpenCode's config under home with the fake at baseURL
// as the only provider ("fake", model "m1", limits given so nothing is
// looked up on models.dev), autoupdate and sharing off. It also marks the
// global config directory's plugin dependency as installed: OpenCode
// otherwise runs `npm install @opencode-ai/plugin` there in the background
// at every start (measured on 1.18.33: a request to registry.npmjs.org).
func WriteConfig(home, baseURL string, c Config) error {
	cfg := map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"provider": map[string]any{"fake": map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "Fake",
			"options": map[string]any{"baseURL": baseURL, "apiKey": "sk-fake"},
			"models":  map[string]any{"m1": map[string]any{"name": "m1", "limit": map[string]any{"context": 128000, "output": 8192}}},
		}},
		"model":             "fake/m1",
		"small_model":       "fake/m1",
		"enabled_providers": []string{"fake"},
		"autoupdate":        false,
		"share":             "disabled",
	}
	if c.Permission != nil {
		cfg["permission"] = c.Permission
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("opencode fakeapi: %w", err)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("opencode fakeapi: %w", err)
	}
	if err := os.WriteFile(ConfigPath(home), b, 0o600); err != nil {
		return fmt.Errorf("opencode fakeapi: writing the config: %w", err)
	}
	global := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(filepath.Join(global, "node_modules"), 0o700); err != nil {
		return fmt.Errorf("opencode fakeapi: %w", err)
	}
	lock := `{"packages":{"":{"dependencies":{"@opencode-ai/plugin":"*"}}}}`
	if err := os.WriteFile(filepath.Join(global, "package-lock.json"), []byte(lock), 0o600); err != nil {
		return fmt.Errorf("opencode fakeapi: seeding the plugin lock: %w", err)
	}
	return nil
}

// HermeticEnv is the whole environment of an OpenCode run that keeps its
// state under home (HOME and every XDG directory), reads the config
// WriteConfig wrote, fetches no model list and no update, and sends any
// other traffic to the refusing proxy at proxyURL ("" leaves the proxy out).
// Only PATH is inherited, for the commands OpenCode runs.
func HermeticEnv(home, proxyURL string) []string {
	return fakeserver.Env(home, proxyURL,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"OPENCODE_CONFIG="+ConfigPath(home),
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_CLAUDE_CODE=1",
	)
}

// OpenCodeBinary finds the real OpenCode CLI for an end-to-end test:
// $OPENCODE_BIN, else the copy `make test` installs under the module root.
// Without it the test fails when E2E_REQUIRED or CI is set and skips
// otherwise.
func OpenCodeBinary(t testing.TB) string { t.Helper(); return fakeserver.Binary(t, openCodeCLI) }

// openCodeCLI is the pinned CLI the tests run.
var openCodeCLI = fakeserver.CLI{Title: "OpenCode CLI", Env: "OPENCODE_BIN", Dir: "opencode", Bin: "opencode",
	Package: "opencode-ai", Version: OpenCodeVersion}
