package fakeapi

import codexfake "github.com/session-supervisor/session-supervisor/sessions/codex/fakeapi"

// StartRefusingProxy starts an HTTP proxy on 127.0.0.1 that refuses every
// request with 403 (the Codex fake's: the same proxy serves every CLI), so
// OpenCode trying to reach another host fails fast instead of leaving the
// machine.
func StartRefusingProxy() (url string, closeFn func(), err error) {
	return codexfake.StartRefusingProxy()
}
