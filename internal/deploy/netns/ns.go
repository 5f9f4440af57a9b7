package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/vishvananda/netns"

	"github.com/svclab/svclab/internal/tempdir"
)

// namePrefix begins the name of every network namespace svclab makes, in
// /run/netns: svclab-PID-START-K-ROLE, where PID and START (its start time
// in clock ticks) name the svclab that owns it, K counts that process's
// deployments and ROLE is "r" (the router, which holds the bridge), "c"
// (the client) or "hN" (machine N). A namespace whose owner is dead is
// removed by the next deployment's start and by `svclab clean`.
const namePrefix = "svclab-"

// runNetns is where named network namespaces are bind-mounted.
const runNetns = "/run/netns"

var deployments atomic.Int64

// nsNames names the namespaces of one deployment of this process.
type nsNames struct{ base string }

func newNames() nsNames {
	o := tempdir.Self()
	return nsNames{base: fmt.Sprintf("%s%d-%d-%d-", namePrefix, o.PID, o.Start, deployments.Add(1))}
}

func (n nsNames) router() string     { return n.base + "r" }
func (n nsNames) client() string     { return n.base + "c" }
func (n nsNames) host(i int) string  { return n.base + "h" + strconv.Itoa(i) }
func (n nsNames) owns(s string) bool { return strings.HasPrefix(s, n.base) }

// ownerOf parses the owner out of a namespace name svclab made.
func ownerOf(name string) (tempdir.Owner, bool) {
	rest, ok := strings.CutPrefix(name, namePrefix)
	if !ok {
		return tempdir.Owner{}, false
	}
	f := strings.Split(rest, "-")
	if len(f) != 4 {
		return tempdir.Owner{}, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return tempdir.Owner{}, false
	}
	return tempdir.Owner{PID: pid, Start: start}, true
}

// sweep deletes the namespaces of dead svclab processes. Deleting a
// namespace deletes its veths, bridge and queueing disciplines with it;
// the hosts that ran in it died with their svclab (parent-death signal).
func sweep() ([]string, error) {
	entries, err := os.ReadDir(runNetns)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", runNetns, err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		o, ok := ownerOf(e.Name())
		if !ok || o.Alive() {
			continue
		}
		if err := netns.DeleteNamed(e.Name()); err != nil {
			errs = append(errs, fmt.Errorf("delete network namespace %s: %w", e.Name(), err))
			continue
		}
		removed = append(removed, "network namespace "+filepath.Join(runNetns, e.Name()))
	}
	return removed, errors.Join(errs...)
}

// newNamed creates a named network namespace from a thread of its own, so
// that no goroutine of the caller's changes namespace.
func newNamed(name string) (netns.NsHandle, error) {
	var h netns.NsHandle
	err := onThread(func() error {
		var err error
		h, err = netns.NewNamed(name)
		return err
	})
	if err != nil {
		return netns.None(), fmt.Errorf("create network namespace %s: %w", name, err)
	}
	return h, nil
}

// onThread runs f on an OS thread of its own and ends that thread after:
// f may leave the thread in another namespace.
func onThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		// Not unlocked: the thread ends with this goroutine.
		errc <- f()
	}()
	return <-errc
}

// inNS runs f on an OS thread switched into ns, and switches the thread
// back (or ends it, when it cannot). Sockets f opens stay in ns.
func inNS(ns netns.NsHandle, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			goruntime.UnlockOSThread()
			errc <- fmt.Errorf("current network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			goruntime.UnlockOSThread()
			errc <- fmt.Errorf("enter network namespace: %w", err)
			return
		}
		ferr := f()
		if err := netns.Set(orig); err != nil {
			// The thread stays locked and ends with this goroutine.
			errc <- errors.Join(ferr, fmt.Errorf("leave network namespace: %w", err))
			return
		}
		goruntime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// dialIn opens a TCP connection from inside ns.
func dialIn(ctx context.Context, ns netns.NsHandle, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := inNS(ns, func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// listenIn binds a TCP listener inside ns.
func listenIn(ns netns.NsHandle, addr string) (net.Listener, error) {
	var l net.Listener
	err := inNS(ns, func() error {
		var err error
		l, err = net.Listen("tcp", addr)
		return err
	})
	return l, err
}
