package agenttest

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// Decoder is a protocol decoder as BenchDecode drives it: Next yields a
// decoded line or event until io.EOF, Stats counts what it skipped.
type Decoder[F any, C interface{ Skipped() int64 }] interface {
	Next() (F, error)
	Stats() C
}

// BenchDecode benchmarks reading stream to its end through a fresh decoder
// from open each round; a read error, or any unit ("lines", "events") the
// decoder skipped, fails the benchmark.
func BenchDecode[F any, C interface{ Skipped() int64 }](b *testing.B, stream []byte, unit string, open func(io.Reader) Decoder[F, C]) {
	b.Helper()
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		d := open(bytes.NewReader(stream))
		for {
			_, err := d.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		if d.Stats().Skipped() != 0 {
			b.Fatalf("%s skipped: %+v", unit, d.Stats())
		}
	}
}
