//go:build !linux

package claudeterm

import "os"

// mapMin: other platforms read every part (mapped is never used).
const mapMin = 1 << 62

func (r *UsageReader) mapped(*os.File, int64) (bool, error) { return false, nil }
