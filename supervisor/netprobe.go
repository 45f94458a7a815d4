package supervisor

import (
	"bufio"
	"bytes"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/session-supervisor/session-supervisor/enum"
)

// Connectivity is what the machine can tell about its own network, for
// Probe.Offline: a transient incident is held without spending its retries
// while the machine is known to be offline.
type Connectivity int

// The answers. ConnUnknown is the zero value: a probe that could not look
// (another platform, /proc unreadable) must never hold a session.
const (
	ConnUnknown Connectivity = iota
	// ConnOnline: a route off the machine exists. Not proof the API is
	// reachable (DNS, a captive portal, the provider may still fail), only
	// that a retry is worth making.
	ConnOnline
	// ConnOffline: no default route, IPv4 or IPv6: nothing beyond the local
	// links is reachable (Wi-Fi off, cable out, VPN down with nothing else).
	ConnOffline
)

var connNames = []string{"unknown", "online", "offline"}

func (c Connectivity) String() string { return enum.Name(c, "connectivity", connNames) }

// Route flags of the kernel's routing tables (linux/route.h, ipv6_route.h).
const (
	rtfUp     = 0x0001
	rtfReject = 0x0200
)

// connectivityFromRoutes decides from the contents of /proc/net/route (v4)
// and /proc/net/ipv6_route (v6); a nil table could not be read. A usable
// default route in either means online. Offline needs the IPv4 table read
// and empty of one; the IPv6 table may be missing (IPv6 disabled) but, if
// read, must hold none either. Without the IPv4 table it cannot tell.
func connectivityFromRoutes(v4, v6 []byte) Connectivity {
	switch {
	case hasDefaultRouteV4(v4) || hasDefaultRouteV6(v6):
		return ConnOnline
	case v4 == nil:
		return ConnUnknown
	}
	return ConnOffline
}

// hasDefaultRouteV4 reads /proc/net/route: a header line, then
// "Iface Destination Gateway Flags RefCnt Use Metric Mask MTU Window IRTT"
// in hex. A default route has destination and mask 0 and is up.
func hasDefaultRouteV4(table []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(table))
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue // the header
		}
		f := strings.Fields(sc.Text())
		if len(f) < 8 || f[0] == "lo" || f[1] != "00000000" || f[7] != "00000000" {
			continue
		}
		if flags, err := strconv.ParseUint(f[3], 16, 32); err == nil && usableRoute(flags) {
			return true
		}
	}
	return false
}

// hasDefaultRouteV6 reads /proc/net/ipv6_route: "dest prefixlen src
// src_prefixlen nexthop metric refcnt use flags iface" in hex. The kernel
// always lists an unreachable default route on lo (flags with RTF_REJECT);
// it does not count.
func hasDefaultRouteV6(table []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(table))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[9] == "lo" || f[1] != "00" || strings.Trim(f[0], "0") != "" {
			continue
		}
		if flags, err := strconv.ParseUint(f[8], 16, 32); err == nil && usableRoute(flags) {
			return true
		}
	}
	return false
}

func usableRoute(flags uint64) bool { return flags&rtfUp != 0 && flags&rtfReject == 0 }

// defaultConnectivity is ProbeConnectivity, unless the agents' API is on
// this machine or the local network (ANTHROPIC_BASE_URL on a loopback or
// private address: a local proxy, a gateway): then the lack of a default
// route says nothing about reaching it, and the probe answers unknown.
func defaultConnectivity() func() Connectivity {
	if apiIsLocal(os.Getenv("ANTHROPIC_BASE_URL")) {
		return func() Connectivity { return ConnUnknown }
	}
	return ProbeConnectivity
}

// apiIsLocal reports whether base is a URL whose host is a loopback or
// private address (or localhost).
func apiIsLocal(base string) bool {
	if base == "" {
		return false
	}
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast())
}
