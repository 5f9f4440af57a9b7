package netns

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"golang.org/x/sys/unix"
)

// toxicType is the toxiproxy toxic that emulates one direction of a link.
// toxiproxy's own latency toxic counts whole milliseconds, too coarse for a
// 0.5 ms link, and has no loss; this one is registered beside it, as
// toxiproxy's CREATING_TOXICS.md describes.
const toxicType = "svclab_link"

func init() { toxics.Register(toxicType, new(linkToxic)) }

// RetransmitDelay is what a lost segment costs: TCP resends it after its
// minimum retransmission timeout (200 ms on Linux), on top of the link's
// latency. A kernel without netem cannot drop packets on a veth, so loss is
// emulated as the delay a loss causes a TCP stream, which is what a caller
// sees of it.
const RetransmitDelay = 200 * time.Millisecond

// linkToxic delays each chunk of one direction of a connection by half the
// link's round trip, spread by ±jitter/2, and by RetransmitDelay more with
// probability loss. Chunks keep their order, as a TCP stream does.
type linkToxic struct {
	// OneWay is half the link's latency, in nanoseconds.
	OneWay int64 `json:"one_way_ns"`
	// Spread is half the link's jitter, in nanoseconds.
	Spread int64   `json:"spread_ns"`
	Loss   float64 `json:"loss"`

	// late is how late this link's sleeps end (see lateness below): per
	// link, as a 10 ms link's sleeps end later than a 1 ms link's.
	late atomic.Int64
}

func (t *linkToxic) GetBufferSize() int { return 1024 }

func (t *linkToxic) delay() time.Duration {
	d := t.OneWay
	if t.Spread > 0 {
		d += rand.Int64N(2*t.Spread+1) - t.Spread
	}
	if t.Loss > 0 && rand.Float64() < t.Loss {
		d += int64(RetransmitDelay)
	}
	return time.Duration(max(d, 0))
}

// Pipe is the toxic's loop (toxics.Toxic).
func (t *linkToxic) Pipe(stub *toxics.ToxicStub) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var last time.Time
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			due := c.Timestamp.Add(t.delay() - arrivalLate()) // from the chunk's arrival (arrival.go)
			if due.Before(last) {
				due = last
			}
			last = due
			// A chunk already due when it got here (a hand-off slower
			// than the link) says nothing of how late sleeps end, and
			// would push the link's chunks early.
			pending := time.Until(due) > 0
			if wait := time.Until(due) - coarse; pending && wait > 0 {
				timer.Reset(wait)
				select {
				case <-timer.C:
				case <-stub.Interrupt:
					timer.Stop()
					stub.Output <- c // no data is dropped
					return
				}
			}
			if pending {
				sleepUntil(due.Add(-time.Duration(t.late.Load())))
				t.learnLateness(time.Since(due))
			}
			stub.Output <- c
		}
	}
}

// addLinkToxics puts the link's emulation on both directions of p.
func addLinkToxics(p *toxiproxy.Proxy, l Link) error {
	if l.Latency == 0 && l.Jitter == 0 && l.Loss == 0 {
		return nil
	}
	for _, dir := range []string{"upstream", "downstream"} {
		attrs, err := json.Marshal(linkToxic{OneWay: int64(l.Latency) / 2, Spread: int64(l.Jitter) / 2, Loss: l.Loss})
		if err != nil {
			return err
		}
		body := fmt.Sprintf(`{"name":"link_%s","type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, dir, toxicType, dir, attrs)
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
			return fmt.Errorf("toxic %s: %w", dir, err)
		}
	}
	return nil
}

// coarse is how late a Go timer can fire on an idle process (the
// runtime's poller sleeps in whole milliseconds): the toxic waits on a
// timer until this long before a chunk is due, and sleeps the rest in
// nanosleep, which the kernel's high-resolution timers end within tens of
// microseconds. Only that last stretch holds an OS thread.
const coarse = 2 * time.Millisecond

// sleepUntil sleeps in the kernel until t.
func sleepUntil(t time.Time) {
	for {
		d := time.Until(t)
		if d <= 0 {
			return
		}
		ts := unix.NsecToTimespec(int64(d))
		if err := unix.Nanosleep(&ts, nil); err != nil && err != unix.EINTR {
			return
		}
	}
}

// lateness: how late, on this machine now, a sleep in the kernel ends is
// the timer slack plus the wait for a CPU, a few tens of microseconds idle
// and hundreds on a loaded machine (more after a longer sleep). Each link
// wakes that much early (linkToxic.late), so that a chunk leaves when it
// is due; every chunk that was pending updates the estimate (an
// exponentially weighted mean, weight 1/8), so it follows the load, and a
// chunk sent early (no sleep was needed) teaches it down.

// maxEarly bounds the estimate: a wake-up that a busy machine delays by
// more is noise to ride out, not a bias to correct; and no chunk leaves
// earlier than a quarter of its link's one-way delay ahead of its time.
const maxEarly = 300 * time.Microsecond

func (t *linkToxic) learnLateness(late time.Duration) {
	limit := min(int64(maxEarly), t.OneWay/4)
	for {
		old := t.late.Load()
		// late is measured against the due time, after waking early by
		// old: the sleep itself ended old+late after it was asked to.
		next := old + (int64(late))/8
		next = min(max(next, 0), limit)
		if t.late.CompareAndSwap(old, next) {
			return
		}
	}
}
