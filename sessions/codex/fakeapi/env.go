package fakeapi

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/fakeserver"
)

// CodexVersion is the Codex CLI release the end-to-end tests pin; the
// Makefile installs the same one.
const CodexVersion = "0.171.0"

// APIKeyEnv is the variable the fake provider's key is read from.
const APIKeyEnv = "FAKE_OPENAI_API_KEY"

// Config are the choices a test makes about Codex's config.toml.
type Config struct {
	// ApprovalPolicy is Codex's approval_policy ("" is "never").
	ApprovalPolicy string
	// StreamIdleTimeout is how long Codex waits on a silent stream before
	// it retries (0: 8 s, so a failing scenario gives up in seconds; a
	// stall test sets minutes, so the supervisor sees the silence).
	StreamIdleTimeout time.Duration
	// Model is the model Codex runs ("" is gpt-fake): a test of usage
	// names one a pricing table knows, dated, or one it does not.
	Model string
}

// WriteConfig writes $codexHome/config.toml pointing Codex at the fake at
// baseURL as the only model provider. The CLI's own HTTP retries are kept
// short (stream_max_retries 2, measured: "Reconnecting... 1/2, 2/2") so a
// failing scenario gives up in seconds; approvalPolicy is Codex's
// approval_policy ("never" runs commands without asking; "on-request" with
// a read-only sandbox asks before a command that writes).
func WriteConfig(codexHome, baseURL string, c Config) error {
	approvalPolicy := c.ApprovalPolicy
	idle := c.StreamIdleTimeout
	if idle <= 0 {
		idle = 8 * time.Second
	}
	sandbox := "danger-full-access"
	if approvalPolicy == "" {
		approvalPolicy = "never"
	}
	if approvalPolicy != "never" {
		// Commands that write outside a read-only sandbox are what Codex
		// asks about.
		sandbox = "read-only"
	}
	model := c.Model
	if model == "" {
		model = "gpt-fake"
	}
	cfg := fmt.Sprintf(`model = %q
model_provider = "fake"
approval_policy = %q
sandbox_mode = %q
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.fake]
name = "Fake"
base_url = %q
env_key = %q
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 2
stream_idle_timeout_ms = %d
`, model, approvalPolicy, sandbox, baseURL, APIKeyEnv, idle.Milliseconds())
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		return fmt.Errorf("codex fakeapi: %w", err)
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg), 0o600); err != nil {
		return fmt.Errorf("codex fakeapi: writing config.toml: %w", err)
	}
	return nil
}

// HermeticEnv is the whole environment of a Codex run that keeps its state
// under codexHome (HOME is home), reads the dummy key, and sends any other
// traffic to the refusing proxy at proxyURL ("" leaves the proxy out). Only
// PATH is inherited, for the commands Codex runs.
func HermeticEnv(home, codexHome, proxyURL string) []string {
	return fakeserver.Env(home, proxyURL,
		"CODEX_HOME="+codexHome,
		APIKeyEnv+"=sk-fake",
		"RUST_LOG=error",
	)
}

// StartRefusingProxy starts an HTTP proxy on 127.0.0.1 that refuses every
// request (CONNECT included) with 403, so a CLI that tries to reach another
// host fails fast instead of leaving the machine.
func StartRefusingProxy() (url string, closeFn func(), err error) {
	return fakeserver.StartRefusingProxy("codex fakeapi", nil)
}

// CodexBinary finds the real Codex CLI for an end-to-end test: $CODEX_BIN,
// else the copy `make test` installs under the module root. Without it the
// test fails when E2E_REQUIRED or CI is set and skips otherwise.
func CodexBinary(t testing.TB) string { t.Helper(); return fakeserver.Binary(t, codexCLI) }

// codexCLI is the pinned CLI the tests run.
var codexCLI = fakeserver.CLI{Title: "Codex CLI", Env: "CODEX_BIN", Dir: "codex", Bin: "codex",
	Package: "@openai/codex", Version: CodexVersion}
