package fakeapi

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
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
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	env := []string{
		"PATH=" + path,
		"HOME=" + home,
		"COPILOT_HOME=" + filepath.Join(home, ".copilot"),
		"XDG_CACHE_HOME=" + cacheDir,
		"COPILOT_OFFLINE=true",
		"COPILOT_AUTO_UPDATE=false",
		"COPILOT_PROVIDER_BASE_URL=" + baseURL,
		"COPILOT_PROVIDER_TYPE=openai",
		"COPILOT_PROVIDER_API_KEY=sk-fake",
		"COPILOT_MODEL=" + Model,
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

// SharedCacheDir is where the tests let Copilot unpack its runtime: one
// directory per user, reused across tests and runs.
func SharedCacheDir() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("session-supervisor-copilot-cache-%d", os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("copilot fakeapi: cache dir: %w", err)
	}
	return dir, nil
}

// StartRefusingProxy starts an HTTP proxy on 127.0.0.1 that refuses every
// request (CONNECT included) with 403 and counts them, so a CLI that tries
// to reach another host fails fast instead of leaving the machine.
func StartRefusingProxy() (url string, refused func() int, closeFn func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, nil, fmt.Errorf("copilot fakeapi: proxy listen: %w", err)
	}
	var (
		mu sync.Mutex
		n  int
	)
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			n++
			mu.Unlock()
			http.Error(w, "copilot fakeapi: test proxy refuses "+r.Method+" "+r.Host, http.StatusForbidden)
		}),
	}
	go func() { _ = srv.Serve(ln) }()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
	return "http://" + ln.Addr().String(), count, func() { _ = srv.Close() }, nil
}

// CopilotBinary finds the real Copilot CLI for an end-to-end test:
// $COPILOT_BIN, else the copy `make test` installs under the module root.
// Without it the test fails when E2E_REQUIRED or CI is set and skips
// otherwise.
func CopilotBinary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("COPILOT_BIN")
	if bin == "" {
		root, err := moduleRoot()
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(root, ".cache", "copilot", "node_modules", ".bin", "copilot")
	}
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("the real Copilot CLI is not at %s (%v); `make test` installs it "+
			"(npm install --prefix .cache/copilot @github/copilot@%s), or set COPILOT_BIN", bin, err, CopilotVersion)
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
