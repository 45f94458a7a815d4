// Package e2e holds the end-to-end suites (Linux: they read /proc and run
// Xvfb): the real app binary driven as a
// user drives it, against the real agent CLIs (each on a fake of its model
// API on 127.0.0.1 behind a refusing proxy), in pseudo-terminals, and under
// Xvfb with a private D-Bus. It has no code of its own outside its tests;
// `make e2e` runs it, `make unit` runs everything else.
package e2e
