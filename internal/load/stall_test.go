package load

import (
	"cmp"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/warn"
)

// stallWatch on event sequences whose silences are known by
// construction; times in ms, the window [1000, 11000).
func TestStallWatch(t *testing.T) {
	type ev struct {
		ms   int64
		kind byte // 's' sent, 'd' dropped, 'a' answered
	}
	// steady: an arrival every 10 ms, answered 5 ms later, from..to.
	steady := func(from, to int64) []ev {
		var out []ev
		for ms := from; ms < to; ms += 10 {
			out = append(out, ev{ms, 's'}, ev{ms + 5, 'a'})
		}
		return out
	}
	cat := func(parts ...[]ev) []ev {
		var out []ev
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	// stuck: sends every 10 ms from..to, none answered until to, when
	// they all are.
	stuck := func(from, to int64) []ev {
		var out []ev
		for ms := from; ms < to; ms += 10 {
			out = append(out, ev{ms, 's'})
		}
		for ms := from; ms < to; ms += 10 {
			out = append(out, ev{to, 'a'})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		evs  []ev
		want string // "" for no warning
	}{
		{"steady", steady(0, 11000), ""},
		// Nothing answered from 4,000 to 5,500 ms while sends went on.
		{"1.5 s stall", cat(steady(0, 4000), stuck(4000, 5500), steady(5500, 11000)), "no answer for 1.5 s from T+3.0 s"},
		{"0.9 s stall", cat(steady(0, 4000), stuck(4000, 4900), steady(4900, 11000)), ""},
		// Two stalls: the longest is named.
		{"two", cat(steady(0, 2000), stuck(2000, 3200), steady(3200, 6000), stuck(6000, 8000), steady(8000, 11000)), "no answer for 2.0 s from T+5.0 s"},
		// A stall still on at the window's end is cut there.
		{"at the end", cat(steady(0, 9000), stuck(9000, 12000)), "no answer for 2.0 s from T+8.0 s"},
		// A stall during the warm-up counts from the window's start.
		{"from the warm-up", cat(steady(0, 200), stuck(200, 2500), steady(2500, 11000)), "no answer for 1.5 s from T+0.0 s"},
		// 2 req/s, each answered after 600 ms: seconds pass with one
		// request outstanding, but one arrival falls due in each: no stall.
		{"slow and rare", func() []ev {
			var out []ev
			for ms := int64(0); ms < 11000; ms += 500 {
				out = append(out, ev{ms, 's'}, ev{ms + 600, 'a'})
			}
			return out
		}(), ""},
		// max_inflight reached: the arrivals are dropped, but they were
		// due, and nothing was answered.
		{"dropped while stuck", cat(steady(0, 3000), []ev{{3000, 's'}, {3010, 'd'}, {3020, 'd'}, {3030, 'd'}, {3040, 'd'}, {3050, 'd'}, {4600, 'a'}}, steady(4600, 11000)), "no answer for 1.6 s from T+2.0 s"},
		// Nothing outstanding for 3 s (no sends): no answers were owed.
		{"idle", cat(steady(0, 3000), steady(6000, 11000)), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newStallWatch(1000*1e6, 11000*1e6)
			evs := append([]ev(nil), tc.evs...)
			// In time order, answers after arrivals at the same ms.
			slices.SortStableFunc(evs, func(a, b ev) int {
				if c := cmp.Compare(a.ms, b.ms); c != 0 {
					return c
				}
				return cmp.Compare(btoi(a.kind == 'a'), btoi(b.kind == 'a'))
			})
			for _, e := range evs {
				switch e.kind {
				case 's':
					w.arrival(e.ms*1e6, true)
				case 'd':
					w.arrival(e.ms*1e6, false)
				case 'a':
					w.answered(e.ms * 1e6)
				}
			}
			got, ok := w.warning(11000 * 1e6)
			if ok != (tc.want != "") || !strings.Contains(got.Text, tc.want) || ok && got.Kind != warn.Stalled {
				t.Errorf("warning %+v, %v; want %q", got, ok, tc.want)
			}
		})
	}
}

// A real server that stops answering for 1.5 s in the middle of a run:
// the run is warned, with the silence's length and start; the same
// server answering throughout gives no warning.
func TestStalledServer(t *testing.T) {
	for _, stall := range []bool{true, false} {
		t.Run(strconv.FormatBool(stall), func(t *testing.T) {
			var (
				mu    sync.Mutex
				n     int
				until time.Time
			)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				n++
				// From the 100th request (1 s into the window at 100/s),
				// every request waits until 1.5 s after it.
				if stall && n == 100 {
					until = time.Now().Add(1500 * time.Millisecond)
				}
				wait := time.Until(until)
				mu.Unlock()
				if wait > 0 {
					time.Sleep(wait)
				}
				w.Write([]byte("ok"))
			}))
			defer srv.Close()
			dur := 3 * time.Second
			if !stall {
				dur = 2 * time.Second
			}
			res := run(t, Config{Target: srv.URL, Rate: 100, Arrival: "constant", Connections: 400, Duration: Duration(dur)}, Options{})
			w, _ := warn.Find(res.Warnings, warn.Stalled)
			got := w.Text
			if !stall {
				if got != "" {
					t.Fatalf("a server that answered throughout: %q", got)
				}
				return
			}
			m := regexp.MustCompile(`no answer for ([0-9.]+) s from T\+([0-9.]+) s`).FindStringSubmatch(got)
			if m == nil {
				t.Fatalf("warnings %q: want a stalled one", res.Warnings)
			}
			d, _ := strconv.ParseFloat(m[1], 64)
			from, _ := strconv.ParseFloat(m[2], 64)
			if d < 1.4 || d > 1.8 || from < 0.8 || from > 1.4 {
				t.Errorf("%q: want about 1.5 s from about T+1.0 s", got)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
