//go:build !windows

package packaging

import "errors"

func newWindowsManager(Spec) (Manager, error) {
	return nil, errors.New("the Windows service can only be managed on Windows")
}

// underWindowsService is false off Windows.
func underWindowsService() bool { return false }

// RunWindowsService runs app directly off Windows, where no service control
// manager needs a dispatcher; DetectLaunch never asks for it there.
func RunWindowsService(app func(stop <-chan struct{}) error) error { return app(nil) }
