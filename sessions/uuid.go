package sessions

import (
	"crypto/rand"
	"encoding/hex"
)

// NewUUID is a random (version 4) UUID in its usual text form: a new
// session's id, an id an agent is given for its session, a message id.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])  // never fails (crypto/rand's contract since Go 1.24)
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // the RFC 9562 variant
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
