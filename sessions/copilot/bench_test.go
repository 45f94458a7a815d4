package copilot

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkDecodeStream decodes a captured tool turn (50 lines, 14 KB) from
// Copilot CLI 1.0.102: the cost per turn of the adapter.
func BenchmarkDecodeStream(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "tool.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		d := NewDecoder(bytes.NewReader(data), 0)
		for {
			if _, err := d.Next(); err != nil {
				break
			}
		}
	}
}
