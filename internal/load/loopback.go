package load

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// CheckLoopback returns an error unless target (a URL or host:port) names
// this machine: a loopback address, a name that resolves only to
// loopback addresses, or a unix socket. `svclab load` refuses other targets unless told,
// since load aimed at someone else's service is an attack.
func CheckLoopback(target string) error {
	if _, ok := unixSocket(target); ok {
		return nil // a socket is on this machine
	}
	host := target
	if strings.Contains(target, "://") {
		u, err := url.Parse(target)
		if err != nil {
			return fmt.Errorf("target %q: %w", target, err)
		}
		host = u.Hostname()
	} else if h, _, err := net.SplitHostPort(target); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "" {
		return fmt.Errorf("target %q has no host", target)
	}
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else {
		var err error
		if ips, err = net.LookupIP(host); err != nil {
			return fmt.Errorf("target %q: resolving %s: %w", target, host, err)
		}
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return fmt.Errorf("target %q is not on this machine (%s is not a loopback address)", target, ip)
		}
	}
	return nil
}
