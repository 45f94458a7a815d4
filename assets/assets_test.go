package assets

import (
	"bytes"
	"image"
	"image/png"
	"testing"
)

func decode(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	return img
}

func TestTrayIconsArePNGAndDistinct(t *testing.T) {
	seen := map[string]Icon{}
	for i := IconAttention; i <= IconIdle; i++ {
		b := TrayIcon(i)
		img := decode(t, b)
		if got := img.Bounds().Dx(); got != 64 || img.Bounds().Dy() != 64 {
			t.Errorf("%s is %v, want 64x64", i, img.Bounds())
		}
		// Transparent corners, opaque centre: a disc, not a square.
		if _, _, _, a := img.At(0, 0).RGBA(); a != 0 {
			t.Errorf("%s has an opaque corner", i)
		}
		if _, _, _, a := img.At(32, 20).RGBA(); a != 0xffff {
			t.Errorf("%s is not opaque inside", i)
		}
		if prev, ok := seen[string(b)]; ok {
			t.Errorf("%s and %s are the same image", i, prev)
		}
		seen[string(b)] = i
	}
}

func TestAppIconSizes(t *testing.T) {
	for _, s := range AppIconSizes {
		b, err := AppIcon(s)
		if err != nil {
			t.Fatal(err)
		}
		if img := decode(t, b); img.Bounds().Dx() != s {
			t.Errorf("app icon %d is %v", s, img.Bounds())
		}
	}
	if _, err := AppIcon(17); err == nil {
		t.Error("AppIcon(17) should fail")
	}
}
