package agenttest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
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

// Drain reads d to its end and returns everything its Next yielded (the
// lines or frames of a decoder); an error other than io.EOF fails tb.
func Drain[F any](tb testing.TB, d interface{ Next() (F, error) }) []F {
	tb.Helper()
	var out []F
	for {
		f, err := d.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			tb.Fatalf("Next: %v", err)
		}
		out = append(out, f)
	}
}

// BigOutput is a command's 1 MB output as a JSON string, what the decode
// benchmarks' tool rounds carry.
func BigOutput() []byte {
	out, _ := json.Marshal(strings.Repeat("build output line ok\n", (1<<20)/21))
	return out
}
