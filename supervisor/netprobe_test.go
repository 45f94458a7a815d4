package supervisor

import "testing"

// Routing tables as the kernel prints them (taken from a container, a
// laptop on Wi-Fi, and the same laptop with Wi-Fi off).
const (
	v4Header  = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
	v4Default = "eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
	v4LAN     = "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
	v4Down    = "wlan0\t00000000\t0101A8C0\t0002\t0\t0\t600\t00000000\t0\t0\t0\n"
	v4Reject  = "wlan0\t00000000\t00000000\t0201\t0\t0\t0\t00000000\t0\t0\t0\n"
	v4OnLo    = "lo\t00000000\t00000000\t0001\t0\t0\t0\t00000000\t0\t0\t0\n"

	v6Default     = "00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000002 00000000 00000003     eth0\n"
	v6LoopUnreach = "00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo\n"
	v6LinkLocal   = "fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000002 00000000 00000001     eth0\n"
	v6Loopback    = "00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo\n"
)

func TestConnectivityFromRoutes(t *testing.T) {
	tests := []struct {
		name   string
		v4, v6 []byte
		want   Connectivity
	}{
		{"v4 default route", []byte(v4Header + v4Default + v4LAN), []byte(v6LinkLocal + v6LoopUnreach), ConnOnline},
		{"v6 default route only", []byte(v4Header + v4LAN), []byte(v6Default + v6LinkLocal), ConnOnline},
		{"v6 only, no v4 table", nil, []byte(v6Default), ConnOnline},
		{"Wi-Fi off: local routes only", []byte(v4Header + v4LAN), []byte(v6LinkLocal + v6Loopback + v6LoopUnreach), ConnOffline},
		{"nothing at all", []byte(v4Header), []byte(v6Loopback + v6LoopUnreach), ConnOffline},
		{"empty tables", []byte{}, []byte{}, ConnOffline},
		{"IPv6 disabled, no v4 default", []byte(v4Header + v4LAN), nil, ConnOffline},
		{"a default route that is not up", []byte(v4Header + v4Down), nil, ConnOffline},
		{"a reject default route", []byte(v4Header + v4Reject), nil, ConnOffline},
		{"a default route on lo does not leave the machine", []byte(v4Header + v4OnLo), nil, ConnOffline},
		{"the header alone is not a route", []byte("Iface\t00000000\tx\t0001\t0\t0\t0\t00000000\n"), nil, ConnOffline},
		{"garbage lines are skipped", []byte(v4Header + "eth0 00000000\n\n" + "eth0\t00000000\t0\tzz\t0\t0\t0\t00000000\n"), []byte("junk\n"), ConnOffline},
		{"nothing could be read", nil, nil, ConnUnknown},
		{"no v4 table and no v6 default: cannot tell", nil, []byte(v6LinkLocal + v6LoopUnreach), ConnUnknown},
	}
	for _, tt := range tests {
		if got := connectivityFromRoutes(tt.v4, tt.v6); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestConnectivityString(t *testing.T) {
	for c, want := range map[Connectivity]string{ConnUnknown: "unknown", ConnOnline: "online", ConnOffline: "offline", 7: "connectivity(7)"} {
		if got := c.String(); got != want {
			t.Errorf("%d: %q, want %q", int(c), got, want)
		}
	}
}
