package claudeterm

import (
	"fmt"
	"os"
	"runtime/debug"
	"syscall"
)

// mapMin is the unread size from which a read maps the file; mapWindow
// what it maps at once (with its pages populated in one call, then
// unmapped: what stays resident is one window, not the file).
const (
	mapMin    = 1 << 20
	mapWindow = 4 << 20
)

// mapped reads the file from r.offset to size through windows of mapped
// memory. done is false when mapping is refused (the caller reads
// instead); a file cut shorter while mapped is an error, not a crash.
func (r *UsageReader) mapped(fh *os.File, size int64) (done bool, err error) {
	page := int64(os.Getpagesize())
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			done, err = true, fmt.Errorf("the transcript was cut while read (%v)", p)
		}
	}()
	for r.offset < size && !r.stopped.Load() {
		start := r.offset - r.offset%page
		n := min(mapWindow, size-start)
		data, err := syscall.Mmap(int(fh.Fd()), start, int(n), syscall.PROT_READ, syscall.MAP_SHARED|syscall.MAP_POPULATE)
		if err != nil {
			return false, nil
		}
		part := data[r.offset-start:]
		r.feed(part)
		r.offset += int64(len(part))
		r.BytesRead += int64(len(part))
		if err := syscall.Munmap(data); err != nil {
			return true, fmt.Errorf("unmapping the transcript: %w", err)
		}
	}
	return true, nil
}
