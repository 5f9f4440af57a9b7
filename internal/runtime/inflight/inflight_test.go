package inflight

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func isDone(g *Gate) bool {
	select {
	case <-g.Done():
		return true
	default:
		return false
	}
}

func TestGate(t *testing.T) {
	tests := []struct {
		name  string
		enter int // calls admitted before Close
		leave int // of them, left before Close
		after int // of the rest, left after Close
		done  bool
	}{
		{"idle gate is done at close", 0, 0, 0, true},
		{"all left before close", 3, 3, 0, true},
		{"done once the last leaves", 3, 1, 2, true},
		{"not done while one is in flight", 3, 1, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var g Gate
			for range tc.enter {
				if !g.Enter() {
					t.Fatal("open gate refused a call")
				}
			}
			for range tc.leave {
				g.Leave()
			}
			if isDone(&g) {
				t.Fatal("open gate is done")
			}
			g.Close()
			if g.Enter() {
				t.Error("closed gate admitted a call")
			}
			if !g.Closed() {
				t.Error("Closed is false after Close")
			}
			for range tc.after {
				g.Leave()
			}
			if got, want := g.InFlight(), tc.enter-tc.leave-tc.after; got != want {
				t.Errorf("InFlight %d, want %d", got, want)
			}
			if got := isDone(&g); got != tc.done {
				t.Errorf("done %v, want %v", got, tc.done)
			}
			g.Close() // twice is harmless
		})
	}
}

// TestGateRace closes a gate while goroutines enter, and checks that Done
// comes only once every admitted call has left.
func TestGateRace(t *testing.T) {
	for range 20 {
		var g Gate
		var tried, left sync.WaitGroup
		var admitted atomic.Int64
		release := make(chan struct{})
		for i := range 50 {
			if i == 25 {
				go g.Close()
			}
			tried.Add(1)
			left.Add(1)
			go func() {
				defer left.Done()
				ok := g.Enter()
				if ok {
					admitted.Add(1)
				}
				tried.Done()
				if ok {
					<-release
					g.Leave()
				}
			}()
		}
		tried.Wait()
		g.Close()
		if n := admitted.Load(); n > 0 && isDone(&g) {
			t.Fatalf("done with %d calls in flight", n)
		}
		if got, want := int64(g.InFlight()), admitted.Load(); got != want {
			t.Fatalf("InFlight %d, want %d", got, want)
		}
		close(release)
		left.Wait()
		select {
		case <-g.Done():
		case <-time.After(time.Second):
			t.Fatalf("not done after every call left (InFlight %d)", g.InFlight())
		}
	}
}
