package tray

import (
	"bytes"
	"image/png"

	"github.com/fyne-io/image/ico"
)

// osIcon is the icon as the Windows tray takes it: an ICO (what Fyne's
// driver converted it to before the tray drove systray directly). An icon
// that does not convert is left as it is; the tray then shows none.
func osIcon(data []byte) []byte {
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return data
	}
	var buf bytes.Buffer
	if err := ico.Encode(&buf, img); err != nil {
		return data
	}
	return buf.Bytes()
}
