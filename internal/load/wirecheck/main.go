// Command wirecheck compares a load generator's per-request latencies with
// what the kernel saw on loopback, for scripts/bench/accuracy.sh. It reads
// a capture as `tcpdump -r FILE -nn -tt` prints it, pairs each request
// with its response on the same connection (a data segment to the server
// port, then the next data segment back), and prints, for the wire and for
// the tool, the request count and the p50, p90 and p99 of latency, with
// the differences the criteria judge:
//
//	wirecheck -capture cap.txt -port 8080 -svclab samples.parquet -lag-p99 0.21
//	wirecheck -capture cap.txt -port 8080 -vegeta results.jsonl
//	wirecheck -capture cap.txt -port 8080 -wrk wrk.txt
//
// Responses are assumed to fit one segment (benchserver's two-byte body
// does), and requests too.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/parquet-go/parquet-go"
)

func main() {
	capture := flag.String("capture", "", "tcpdump -r FILE -nn -tt output")
	port := flag.Int("port", 0, "the server's port")
	svclab := flag.String("svclab", "", "svclab's samples.parquet")
	vegeta := flag.String("vegeta", "", "vegeta encode --to json output")
	wrk := flag.String("wrk", "", "wrk --latency output")
	lagP99 := flag.Float64("lag-p99", 0, "svclab's reported send-lag p99, ms")
	name := flag.String("name", "", "label for the output line")
	flag.Parse()
	if err := run(*capture, *port, *svclab, *vegeta, *wrk, *lagP99, *name); err != nil {
		fmt.Fprintln(os.Stderr, "wirecheck:", err)
		os.Exit(1)
	}
}

func newHist() *hdr.Histogram { return hdr.New(1, 60_000_000_000, 3) } // ns

type dist struct {
	n             int64
	p50, p90, p99 float64 // ms
}

func summarize(h *hdr.Histogram) dist {
	v := h.ValueAtPercentiles([]float64{50, 90, 99})
	return dist{n: h.TotalCount(), p50: float64(v[50]) / 1e6, p90: float64(v[90]) / 1e6, p99: float64(v[99]) / 1e6}
}

func run(capture string, port int, svclab, vegeta, wrk string, lagP99 float64, name string) error {
	if capture == "" || port == 0 {
		return errors.New("-capture and -port are required")
	}
	wire, err := readWire(capture, port)
	if err != nil {
		return err
	}
	w := summarize(wire)
	var tool dist
	var svc *dist
	switch {
	case svclab != "":
		lat, st, err := readSvclab(svclab)
		if err != nil {
			return err
		}
		tool = summarize(lat)
		s := summarize(st)
		svc = &s
	case vegeta != "":
		h, err := readVegeta(vegeta)
		if err != nil {
			return err
		}
		tool = summarize(h)
	case wrk != "":
		if tool, err = readWrk(wrk); err != nil {
			return err
		}
	default:
		return errors.New("one of -svclab, -vegeta, -wrk is required")
	}
	fmt.Printf("%-14s count %7d wire %7d  p50 %.3f wire %.3f (%+.3f)  p90 %.3f wire %.3f (%+.3f)  p99 %.3f wire %.3f (%+.3f)",
		name, tool.n, w.n, tool.p50, w.p50, tool.p50-w.p50, tool.p90, w.p90, tool.p90-w.p90, tool.p99, w.p99, tool.p99-w.p99)
	if svc != nil {
		fmt.Printf("  service time p50 %.3f p99 %.3f  lag p99 %.3f", svc.p50, svc.p99, lagP99)
		ok := tool.n == w.n && abs(tool.p50-w.p50) <= 0.1 && abs(tool.p90-w.p90) <= 0.1 && tool.p99-w.p99 <= 0.1+lagP99
		fmt.Printf("  criteria %s", map[bool]string{true: "met", false: "missed"}[ok])
	}
	fmt.Println()
	return nil
}

func abs(x float64) float64 { return max(x, -x) }

var line = regexp.MustCompile(`^(\d+)\.(\d+) IP [\d.]+\.(\d+) > [\d.]+\.(\d+): .*length (\d+)`)

// readWire pairs requests and responses per connection. The timestamps
// are the kernel's, as tcpdump printed them (µs or ns).
func readWire(path string, port int) (*hdr.Histogram, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := newHist()
	pending := map[string][]int64{} // client port → request times, ns
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[5])
		if n == 0 {
			continue
		}
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		frac := m[2]
		fns, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		ts := sec*1e9 + fns
		src, dst := m[3], m[4]
		switch strconv.Itoa(port) {
		case dst:
			pending[src] = append(pending[src], ts)
		case src:
			q := pending[dst]
			if len(q) == 0 {
				continue // a continuation segment
			}
			h.RecordValue(max(ts-q[0], 1))
			pending[dst] = q[1:]
		}
	}
	return h, sc.Err()
}

type sample struct {
	LatencyUs     float64 `parquet:"latency_us"`
	ServiceTimeUs float64 `parquet:"service_time_us"`
	Status        string  `parquet:"status"`
}

func readSvclab(path string) (lat, svc *hdr.Histogram, err error) {
	rows, err := parquet.ReadFile[sample](path)
	if err != nil {
		return nil, nil, err
	}
	lat, svc = newHist(), newHist()
	for _, r := range rows {
		lat.RecordValue(int64(r.LatencyUs * 1e3))
		svc.RecordValue(int64(r.ServiceTimeUs * 1e3))
	}
	return lat, svc, nil
}

func readVegeta(path string) (*hdr.Histogram, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := newHist()
	dec := json.NewDecoder(f)
	for dec.More() {
		var r struct {
			Latency int64 `json:"latency"`
		}
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		h.RecordValue(max(r.Latency, 1))
	}
	return h, nil
}

var (
	wrkPct   = regexp.MustCompile(`^\s*(50|90|99)%\s+([\d.]+)(us|ms|s)\s*$`)
	wrkCount = regexp.MustCompile(`^\s*(\d+) requests in`)
)

// readWrk reads wrk's own percentiles (--latency prints 50, 75, 90, 99).
func readWrk(path string) (dist, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return dist{}, err
	}
	var d dist
	unit := map[string]float64{"us": 1e-3, "ms": 1, "s": 1e3}
	for _, l := range strings.Split(string(b), "\n") {
		if m := wrkPct.FindStringSubmatch(l); m != nil {
			v, _ := strconv.ParseFloat(m[2], 64)
			v *= unit[m[3]]
			switch m[1] {
			case "50":
				d.p50 = v
			case "90":
				d.p90 = v
			case "99":
				d.p99 = v
			}
		}
		if m := wrkCount.FindStringSubmatch(l); m != nil {
			d.n, _ = strconv.ParseInt(m[1], 10, 64)
		}
	}
	if d.n == 0 {
		return d, fmt.Errorf("%s: no wrk summary", path)
	}
	return d, nil
}
