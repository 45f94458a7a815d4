package fakeserver

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// StartRefusingProxy starts an HTTP proxy on 127.0.0.1 that refuses every
// request (CONNECT included) with 403 "NAME: test proxy refuses METHOD HOST",
// so a CLI that tries to reach another host fails fast instead of leaving the
// machine. onRefuse, when set, sees each refused request's method and target
// host. closeFn stops it.
func StartRefusingProxy(name string, onRefuse func(method, host string)) (url string, closeFn func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("%s: proxy listen: %w", name, err)
	}
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if onRefuse != nil {
				onRefuse(r.Method, r.Host)
			}
			http.Error(w, name+": test proxy refuses "+r.Method+" "+r.Host, http.StatusForbidden)
		}),
	}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// CLI is a real agent CLI an end-to-end test runs, and how `make test`
// installs it (npm install --prefix .cache/Dir Package@Version).
type CLI struct {
	Title   string // "Codex CLI", as the skip message names it
	Env     string // the variable that overrides the path, "CODEX_BIN"
	Dir     string // the install's folder under .cache
	Bin     string // the program in node_modules/.bin
	Package string // the npm package
	Version string // the pinned release
}

// Binary finds c for an end-to-end test: $Env, else the copy `make test`
// installs under the module root. Without it the test fails when
// E2E_REQUIRED or CI is set (under `make test` and in CI a skip would hide a
// broken install) and skips otherwise, naming what is missing.
func Binary(t testing.TB, c CLI) string {
	t.Helper()
	bin := os.Getenv(c.Env)
	if bin == "" {
		root, err := ModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(root, ".cache", c.Dir, "node_modules", ".bin", c.Bin)
	}
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("the real %s is not at %s (%v); `make test` installs it "+
			"(npm install --prefix .cache/%s %s@%s), or set %s", c.Title, bin, err, c.Dir, c.Package, c.Version, c.Env)
		if os.Getenv("E2E_REQUIRED") != "" || os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// ModuleRoot walks up from the working directory to the one holding go.mod.
func ModuleRoot() (string, error) {
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

// Env is the whole environment (for exec.Cmd.Env) of a CLI run under a
// test: PATH inherited (a default where it is unset: the commands the CLI
// runs need it), HOME, TMPDIR (home too), then vars, then the refusing
// proxy at proxyURL (ProxyEnv; "" leaves it out). It is built from scratch
// rather than from os.Environ, so nothing of the developer's setup (a real
// API key, a real proxy, XDG directories) leaks into the test.
//
// TMPDIR is home because the CLIs write there and never clean up (OpenCode,
// a Bun binary, extracts a 5.5 MB native library at every start; Gemini
// writes an error report for each failed request; Node keeps its compile
// cache there): under the test's home it goes with the test instead of
// piling up in the machine's /tmp. home exists already (the CLI's state is
// there), which a directory of its own would not.
func Env(home, proxyURL string, vars ...string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	env := append([]string{"PATH=" + path, "HOME=" + home, "TMPDIR=" + home}, vars...)
	return append(env, ProxyEnv(proxyURL)...)
}

// ProxyEnv is the environment that sends a CLI's traffic through the
// refusing proxy at proxyURL (every spelling of the proxy variables, both
// cases: runtimes and the tools they spawn disagree on which they read),
// with loopback exempt so the fake API stays reachable. "" is none.
func ProxyEnv(proxyURL string) []string {
	if proxyURL == "" {
		return nil
	}
	var env []string
	for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY", "all_proxy"} {
		env = append(env, k+"="+proxyURL)
	}
	for _, k := range []string{"NO_PROXY", "no_proxy"} {
		env = append(env, k+"=127.0.0.1,localhost")
	}
	return env
}
