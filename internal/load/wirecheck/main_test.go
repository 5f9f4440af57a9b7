package main

import (
	"os"
	"path/filepath"
	"testing"
)

// Two connections interleaved, a handshake, and a continuation segment:
// the pairs are (1.000100 → 1.000400) = 300 µs and (1.000200 → 1.001200)
// = 1,000 µs on one connection, (1.000300 → 1.000350) = 50 µs on the other.
const capture = `1.000000000 IP 127.0.0.1.5001 > 127.0.0.1.8080: Flags [S], seq 1, win 65495, length 0
1.000100000 IP 127.0.0.1.5001 > 127.0.0.1.8080: Flags [P.], seq 1:79, ack 1, win 64, length 78: HTTP: GET / HTTP/1.1
1.000200000 IP 127.0.0.1.5001 > 127.0.0.1.8080: Flags [P.], seq 79:157, ack 1, win 64, length 78: HTTP: GET / HTTP/1.1
1.000300000 IP 127.0.0.1.5002 > 127.0.0.1.8080: Flags [P.], seq 1:79, ack 1, win 64, length 78: HTTP: GET / HTTP/1.1
1.000350000 IP 127.0.0.1.8080 > 127.0.0.1.5002: Flags [P.], seq 1:104, ack 79, win 64, length 103: HTTP: HTTP/1.1 200 OK
1.000400000 IP 127.0.0.1.8080 > 127.0.0.1.5001: Flags [P.], seq 1:104, ack 79, win 64, length 103: HTTP: HTTP/1.1 200 OK
1.000500000 IP 127.0.0.1.8080 > 127.0.0.1.5001: Flags [.], ack 157, win 64, length 0
1.001200000 IP 127.0.0.1.8080 > 127.0.0.1.5001: Flags [P.], seq 104:207, ack 157, win 64, length 103: HTTP: HTTP/1.1 200 OK
1.001300000 IP 127.0.0.1.8080 > 127.0.0.1.5001: Flags [P.], seq 207:210, ack 157, win 64, length 3
`

func TestReadWire(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cap.txt")
	if err := os.WriteFile(path, []byte(capture), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := readWire(path, 8080)
	if err != nil {
		t.Fatal(err)
	}
	// HdrHistogram at 3 significant digits: within 0.1%.
	if h.TotalCount() != 3 || !h.ValuesAreEquivalent(h.Min(), 50_000) || !h.ValuesAreEquivalent(h.Max(), 1_000_000) {
		t.Fatalf("pairs: count %d, min %d ns, max %d ns; want 3 pairs of 50, 300 and 1,000 µs", h.TotalCount(), h.Min(), h.Max())
	}
	if d := summarize(h); d.p50 < 0.2997 || d.p50 > 0.3003 {
		t.Errorf("p50 %.4f ms, want 0.300", d.p50)
	}
}

func TestReadWrk(t *testing.T) {
	out := `Running 5s test @ http://127.0.0.1:8080/
  Latency Distribution
     50%  362.00us
     75%  601.00us
     90%    1.39ms
     99%    5.98ms
  28465 requests in 5.00s, 3.39MB read
`
	path := filepath.Join(t.TempDir(), "wrk.txt")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := readWrk(path)
	if err != nil {
		t.Fatal(err)
	}
	if d.n != 28465 || d.p50 != 0.362 || d.p90 != 1.39 || d.p99 != 5.98 {
		t.Errorf("wrk summary %+v", d)
	}
}
