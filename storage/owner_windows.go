package storage

import (
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// checkOwner refuses a data directory another account owns, then gives it
// an ACL of its own: full control for the user and for SYSTEM (which runs
// the service manager and backups), nobody else, and nothing inherited
// from the parent. %LocalAppData% is private already; a directory chosen
// with SESSION_SUPERVISOR_HOME or --data-dir elsewhere (C:\data, a shared
// drive) would otherwise keep whatever its parent grants.
func checkOwner(dir string, _ os.FileInfo) error {
	user, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return fmt.Errorf("data directory %s: finding your account: %w", dir, err)
	}
	me := user.User.Sid
	sd, err := windows.GetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return fmt.Errorf("data directory %s: reading its owner: %w", dir, err)
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return fmt.Errorf("data directory %s: reading its owner: %w", dir, err)
	}
	if !owner.Equals(me) {
		return fmt.Errorf("data directory %s belongs to %s, not to you (%s): its owner could read your sessions and impersonate the app; use a directory of your own (--data-dir or $%s)",
			dir, owner, me, EnvHome)
	}
	system, err := windows.CreateWellKnownSid(windows.WinLocalSystemSid)
	if err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	grant := func(sid *windows.SID, kind windows.TRUSTEE_TYPE) windows.EXPLICIT_ACCESS {
		return windows.EXPLICIT_ACCESS{
			AccessPermissions: windows.GENERIC_ALL,
			AccessMode:        windows.SET_ACCESS,
			Inheritance:       windows.SUB_CONTAINERS_AND_OBJECTS_INHERIT,
			Trustee: windows.TRUSTEE{
				TrusteeForm:  windows.TRUSTEE_IS_SID,
				TrusteeType:  kind,
				TrusteeValue: windows.TrusteeValueFromSID(sid),
			},
		}
	}
	acl, err := windows.ACLFromEntries([]windows.EXPLICIT_ACCESS{grant(me, windows.TRUSTEE_IS_USER), grant(system, windows.TRUSTEE_IS_WELL_KNOWN_GROUP)}, nil)
	if err != nil {
		return fmt.Errorf("data directory %s: building its owner-only ACL: %w", dir, err)
	}
	if err := windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, acl, nil); err != nil {
		return fmt.Errorf("data directory %s: restricting it to you: %w", dir, err)
	}
	return nil
}
