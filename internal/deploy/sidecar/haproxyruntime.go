package sidecar

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// HAProxy follows endpoint changes through its runtime API (the stats
// socket), with no reload: each outbound backend has HAProxySlots server
// slots; a new upstream takes a spare slot (`set server … addr`, then
// `state ready`) and one that left has its slot put in maintenance
// (`state maint`), which lets the calls in flight on it finish. A reload
// (-sf) would start a new process and hand the listeners over, which
// changes the process svclab samples and starts every connection anew;
// `add server` would work too, but servers added so do not take the
// backend's TLS settings in HAProxy 2.6 as written servers do, and a
// slot keeps the configuration one place.

// HAProxySlots is how many upstreams an outbound backend of a haproxy
// sidecar can hold at once: the most replicas of a callee it follows.
const HAProxySlots = 32

// haproxySpare is the address of a spare slot: nothing listens on port 1,
// and a slot in maintenance gets no calls anyway.
const haproxySpare = "127.0.0.1:1"

// haproxyTimeout bounds one runtime API exchange.
const haproxyTimeout = 5 * time.Second

// maxSocketPath is the longest path a unix socket address holds on Linux.
const maxSocketPath = 107

func hasOutbound(c Config) bool {
	return slices.ContainsFunc(c.Listeners, func(l Listener) bool { return !l.Inbound })
}

// haproxySocket is the path of c's runtime API socket.
func haproxySocket(c Config) (string, error) {
	p := filepath.Join(c.Dir, "haproxy.sock")
	if len(p) > maxSocketPath {
		return "", fmt.Errorf("the runtime API socket %s is longer than a unix socket path may be (%d bytes); use a shorter TMPDIR", p, maxSocketPath)
	}
	return p, nil
}

// haproxyRun sends one command over the runtime API and returns the
// answer; the socket is in non-interactive mode, so HAProxy closes it
// after answering.
func haproxyRun(sock, cmd string) (string, error) {
	conn, err := net.DialTimeout("unix", sock, haproxyTimeout)
	if err != nil {
		return "", fmt.Errorf("runtime API: %w", err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(haproxyTimeout)); err != nil {
		return "", fmt.Errorf("runtime API: %w", err)
	}
	if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
		return "", fmt.Errorf("runtime API %q: %w", cmd, err)
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return "", fmt.Errorf("runtime API %q: %w", cmd, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// haproxySlot is one server slot of a backend, as `show stat` reports it.
type haproxySlot struct {
	name, addr string
	maint      bool
}

// haproxySlots reads the server slots of backend from `show stat`, whose
// CSV names its columns in its first line.
func haproxySlots(sock, backend string) ([]haproxySlot, error) {
	out, err := haproxyRun(sock, "show stat")
	if err != nil {
		return nil, err
	}
	r := csv.NewReader(strings.NewReader(strings.TrimPrefix(out, "# ")))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil || len(rows) == 0 {
		return nil, fmt.Errorf("runtime API show stat: unreadable answer %q: %v", out, err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, name := range []string{"pxname", "svname", "status", "addr"} {
		if _, ok := col[name]; !ok {
			return nil, fmt.Errorf("runtime API show stat: no column %s in %q", name, rows[0])
		}
	}
	var slots []haproxySlot
	for _, row := range rows[1:] {
		if len(row) < len(rows[0]) || row[col["pxname"]] != backend {
			continue
		}
		sv := row[col["svname"]]
		if sv == "FRONTEND" || sv == "BACKEND" {
			continue
		}
		slots = append(slots, haproxySlot{name: sv, addr: row[col["addr"]], maint: strings.HasPrefix(row[col["status"]], "MAINT")})
	}
	if len(slots) == 0 {
		return nil, fmt.Errorf("runtime API: no backend %s", backend)
	}
	return slots, nil
}

// Update moves each changed listener's backend to its new upstreams:
// new ones into spare slots first, then the slots of those that left into
// maintenance, so that the backend never runs out of servers. It checks
// the result from HAProxy's own report.
func (haproxy) Update(c Config, changed []Listener) error {
	sock, err := haproxySocket(c)
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range changed {
		if err := haproxyUpdate(sock, "to_"+l.Name, l.Upstreams); err != nil {
			errs = append(errs, fmt.Errorf("backend to_%s: %w", l.Name, err))
		}
	}
	return errors.Join(errs...)
}

func haproxyUpdate(sock, backend string, want []string) error {
	slots, err := haproxySlots(sock, backend)
	if err != nil {
		return err
	}
	serving := map[string]bool{}
	var spare []string
	for _, s := range slots {
		if s.maint {
			spare = append(spare, s.name)
		} else {
			serving[s.addr] = true
		}
	}
	for _, a := range want {
		if serving[a] {
			continue
		}
		if len(spare) == 0 {
			return fmt.Errorf("no spare server slot for %s: all %d hold upstreams", a, len(slots))
		}
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			return fmt.Errorf("upstream %q: %w", a, err)
		}
		srv := backend + "/" + spare[0]
		spare = spare[1:]
		if out, err := haproxyRun(sock, fmt.Sprintf("set server %s addr %s port %s", srv, host, port)); err != nil {
			return err
		} else if !strings.Contains(out, "changed") && !strings.Contains(out, "no need to change") {
			return fmt.Errorf("set server %s addr %s: %s", srv, a, out)
		}
		if out, err := haproxyRun(sock, "set server "+srv+" state ready"); err != nil {
			return err
		} else if out != "" {
			return fmt.Errorf("set server %s state ready: %s", srv, out)
		}
	}
	for _, s := range slots {
		if s.maint || slices.Contains(want, s.addr) {
			continue
		}
		if out, err := haproxyRun(sock, "set server "+backend+"/"+s.name+" state maint"); err != nil {
			return err
		} else if out != "" {
			return fmt.Errorf("set server %s/%s state maint: %s", backend, s.name, out)
		}
	}
	// What HAProxy reports is what counts.
	slots, err = haproxySlots(sock, backend)
	if err != nil {
		return err
	}
	var got []string
	for _, s := range slots {
		if !s.maint {
			got = append(got, s.addr)
		}
	}
	if !sameSet(got, want) {
		return fmt.Errorf("serves %v after the update, want %v", got, want)
	}
	return nil
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
