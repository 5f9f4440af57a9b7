package resilience

import (
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// TestPeerOptions gives one peer ("strict") a policy of its own under the
// host's: calls to it get its timeout and no retries, calls to another
// peer ("p") the host's retries; both against real gRPC servers.
func TestPeerOptions(t *testing.T) {
	loose, strict := startServer(t), startServer(t)
	failTwice := func(n int64) error {
		if n <= 2 {
			return unavailable
		}
		return nil
	}
	loose.failWith(failTwice)
	strict.failWith(failTwice)
	strict.delay.Store(int64(200 * time.Millisecond))
	r := New("g", Options{
		Retries: 3, RetryBudget: 1, MinRetriesPerSecond: 100, RetryOn: []codes.Code{codes.Unavailable},
		Peers: map[string]Options{"strict": {Timeout: 50 * time.Millisecond, RetryOn: []codes.Code{codes.Unavailable}}},
	})
	if err := call(client(t, loose, r)); err != nil {
		t.Errorf("peer p (3 retries): %v, want success on the third attempt", err)
	}
	if n := loose.calls.Load(); n != 3 {
		t.Errorf("peer p's server saw %d attempts, want 3", n)
	}
	cc, err := grpc.NewClient(strict.addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUnaryInterceptor(r.Client("strict")))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	start := time.Now()
	err = call(healthpb.NewHealthClient(cc))
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("peer strict: %v, want its own 50 ms timeout", err)
	}
	if el := time.Since(start); el > 150*time.Millisecond {
		t.Errorf("peer strict: the call took %s, want its 50 ms timeout and no retry", el)
	}
	time.Sleep(300 * time.Millisecond) // the server finishes its delayed attempt
	if n := strict.calls.Load(); n != 1 {
		t.Errorf("peer strict's server saw %d attempts, want 1 (no retries of its own)", n)
	}
	if s := r.Stats("strict"); s.Retries != 0 || s.Attempts != 1 {
		t.Errorf("peer strict: %+v", s)
	}
	if s := r.Stats("p"); s.Retries != 2 {
		t.Errorf("peer p: %+v, want 2 retries", s)
	}
}
