package fakeapi

import (
	"github.com/session-supervisor/session-supervisor/sessions/fakeserver"
)

// HermeticEnv is the complete environment (for exec.Cmd.Env) of a Claude
// Code CLI run that talks only to the fake API at baseURL, keeps its state
// under home, and sends any other traffic to the proxy at proxyURL (see
// StartRefusingProxy; "" leaves the proxy variables out).
//
// It is built from scratch rather than from os.Environ so nothing from the
// developer's setup (a real API key, ANTHROPIC_* overrides, XDG dirs, a real
// proxy) leaks into the test. Only PATH is inherited: the CLI's Bash tool
// needs it to find sleep, echo, mkdir. exec.Cmd keeps the last value of a
// repeated variable, so callers can override an entry by appending, e.g.
// "CLAUDE_CODE_MAX_RETRIES=0" or "IS_SANDBOX=1" (which root needs for
// --dangerously-skip-permissions).
func HermeticEnv(home, baseURL, proxyURL string) []string {
	env := fakeserver.Env(home, "",
		"ANTHROPIC_BASE_URL="+baseURL,
		// Sent as x-api-key; the fake accepts anything.
		"ANTHROPIC_API_KEY=test",
		// These four stop the update check, telemetry, error reports and the
		// other background calls, which leaves the messages call as the
		// CLI's only request.
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		// The default of 10 retries takes about 3 minutes on a failing
		// scenario; 2 keeps error tests to a few seconds.
		"CLAUDE_CODE_MAX_RETRIES=2",
	)
	if proxyURL != "" {
		// Both spellings: the CLI's runtime and the tools it spawns do not
		// agree on which one they read.
		for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"} {
			env = append(env, k+"="+proxyURL)
		}
		for _, k := range []string{"NO_PROXY", "no_proxy"} {
			env = append(env, k+"=127.0.0.1,localhost")
		}
	}
	return env
}

// StartRefusingProxy starts an HTTP proxy on 127.0.0.1 that answers every
// request, CONNECT included, with 403. Pointing HTTPS_PROXY/HTTP_PROXY at it
// guarantees a test run cannot reach the network even if the CLI ignores
// the DISABLE_* variables: the attempt fails fast instead of leaving the
// host. closeFn stops it.
func StartRefusingProxy() (url string, closeFn func(), err error) {
	return startRefusingProxy(nil)
}

// startRefusingProxy is StartRefusingProxy with a hook that sees each
// refused request (method and target host), for tests that report what the
// CLI tried to reach.
func startRefusingProxy(onRefuse func(method, host string)) (string, func(), error) {
	return fakeserver.StartRefusingProxy("fakeapi", onRefuse)
}
