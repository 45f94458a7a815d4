package fakeapi

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions/fakeserver"
)

// CopilotVersion is the Copilot CLI release the end-to-end tests pin; the
// Makefile installs the same one. Its npm package is a Node loader that
// runs a native binary from the platform package npm installs beside it
// (@github/copilot-linux-x64): nothing is downloaded at run time, and Node
// 20 runs the loader.
const CopilotVersion = "1.0.102"

// HermeticEnv is the whole environment of a Copilot run against the fake
// at baseURL: state under home (COPILOT_HOME inside it), the CLI's unpacked
// runtime in cacheDir (XDG_CACHE_HOME: Copilot unpacks about 235 MB there
// on first run, so tests share one), BYOK on the fake with a dummy key,
// offline mode (no GitHub login, no telemetry, no update check), and any
// other traffic sent to the refusing proxy at proxyURL ("" leaves it out).
// Only PATH is inherited, for the commands Copilot runs.
func HermeticEnv(home, cacheDir, baseURL, proxyURL string) []string {
	return env(home, cacheDir, proxyURL,
		"COPILOT_OFFLINE=true",
		"COPILOT_PROVIDER_BASE_URL="+baseURL,
		"COPILOT_PROVIDER_TYPE=openai",
		"COPILOT_PROVIDER_API_KEY=sk-fake",
	)
}

// CopilotAPIEnv is HermeticEnv with the fake at baseURL (its root, not
// URL) as Copilot's own API instead of a BYOK provider: a dummy GitHub
// token, the account looked up at the fake (COPILOT_DEBUG_GITHUB_API_URL)
// and the model API it names there, so what the CLI reads only from its
// own API (its plan's rate limits) can be measured. Not offline: offline
// mode refuses the GitHub login; every other host still goes to the
// refusing proxy.
func CopilotAPIEnv(home, cacheDir, baseURL, proxyURL string) []string {
	return env(home, cacheDir, proxyURL,
		"COPILOT_GITHUB_TOKEN=gho_fake",
		"COPILOT_DEBUG_GITHUB_API_URL="+baseURL,
		"COPILOT_API_URL="+baseURL,
	)
}

// env is what every Copilot run of the tests has whichever API it talks
// to: state under home, the shared runtime in cacheDir, no self-update, the
// fake's model, no colour, and the refusing proxy; api says which API.
func env(home, cacheDir, proxyURL string, api ...string) []string {
	return fakeserver.Env(home, proxyURL, append([]string{
		"COPILOT_HOME=" + filepath.Join(home, ".copilot"),
		"XDG_CACHE_HOME=" + cacheDir,
		"COPILOT_AUTO_UPDATE=false",
		"COPILOT_MODEL=" + Model,
		"NO_COLOR=1",
	}, api...)...)
}

// SharedCacheDir is where the tests let Copilot unpack its runtime: one
// directory per user, reused across tests and runs, so it is a cache under
// the user's cache directory (session-supervisor-tests/copilot), not a
// temporary file: a test run leaves nothing in TMPDIR.
func SharedCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("copilot fakeapi: cache dir: %w", err)
	}
	dir := filepath.Join(base, "session-supervisor-tests", "copilot")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("copilot fakeapi: cache dir: %w", err)
	}
	return dir, nil
}

// StartRefusingProxy starts an HTTP proxy on 127.0.0.1 that refuses every
// request (CONNECT included) with 403 and counts them, so a CLI that tries
// to reach another host fails fast instead of leaving the machine.
func StartRefusingProxy() (url string, refused func() int, closeFn func(), err error) {
	var (
		mu sync.Mutex
		n  int
	)
	url, closeFn, err = fakeserver.StartRefusingProxy("copilot fakeapi", func(string, string) {
		mu.Lock()
		n++
		mu.Unlock()
	})
	if err != nil {
		return "", nil, nil, err
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
	return url, count, closeFn, nil
}

// CopilotBinary finds the real Copilot CLI for an end-to-end test:
// $COPILOT_BIN, else the copy `make test` installs under the module root.
// Without it the test fails when E2E_REQUIRED or CI is set and skips
// otherwise.
func CopilotBinary(t testing.TB) string { t.Helper(); return fakeserver.Binary(t, copilotCLI) }

// copilotCLI is the pinned CLI the tests run.
var copilotCLI = fakeserver.CLI{Title: "Copilot CLI", Env: "COPILOT_BIN", Dir: "copilot", Bin: "copilot",
	Package: "@github/copilot", Version: CopilotVersion}
