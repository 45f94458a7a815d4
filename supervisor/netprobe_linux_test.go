package supervisor

import (
	"os"
	"testing"
)

// On Linux the probe reads the real tables: it must give the answer the
// parser gives for them, and never unknown (/proc/net/route always exists).
func TestProbeConnectivityReadsTheKernel(t *testing.T) {
	v4, err := os.ReadFile("/proc/net/route")
	if err != nil {
		t.Fatalf("reading the routing table: %v", err)
	}
	v6, _ := os.ReadFile("/proc/net/ipv6_route")
	got := ProbeConnectivity()
	if got == ConnUnknown {
		t.Fatal("the probe could not tell, with /proc/net/route readable")
	}
	if want := connectivityFromRoutes(v4, v6); got != want {
		t.Errorf("ProbeConnectivity() = %v, the tables say %v", got, want)
	}
	t.Logf("this machine: %v", got)
}
