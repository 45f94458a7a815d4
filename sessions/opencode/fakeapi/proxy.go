package fakeapi

import "github.com/session-supervisor/session-supervisor/sessions/fakeserver"

// StartRefusingProxy starts an HTTP proxy on 127.0.0.1 that refuses every
// request with 403, so OpenCode trying to reach another host fails fast
// instead of leaving the machine. It refuses in the Codex fake's words, as
// it did when it was that fake's proxy.
func StartRefusingProxy() (url string, closeFn func(), err error) {
	return fakeserver.StartRefusingProxy("codex fakeapi", nil)
}
