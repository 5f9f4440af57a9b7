package load

import (
	"encoding/json"
	"testing"
	"time"
)

// A generator's progress line carries its second's histogram, and the
// sum of several generators' seconds is their histograms merged: the
// live view's percentiles are then the merged HDR's, not the slowest
// generator's.
func TestProgressJSONAndSumMergeHistograms(t *testing.T) {
	mk := func(vals ...int64) Progress {
		h := newHist()
		for _, v := range vals {
			_ = h.RecordValue(v)
		}
		return Progress{Elapsed: time.Second, Requests: int64(len(vals)), Latency: h,
			ErrorClasses: map[string]int64{"timeout": 1}, LagMax: time.Duration(vals[0]) * time.Microsecond}
	}
	a, b := mk(100, 200, 300), mk(5000, 7000)
	var got []Progress
	sum := newProgressSum(2, func(p Progress) { got = append(got, p) })
	for _, p := range []Progress{a, b} {
		line, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var back Progress
		if err := json.Unmarshal(line, &back); err != nil {
			t.Fatal(err)
		}
		if back.Latency == nil || !back.Latency.Equals(p.Latency) {
			t.Fatalf("histogram after the JSON round trip differs: %s", line)
		}
		sum.add(back)
	}
	if len(got) != 1 {
		t.Fatalf("sum passed on %d seconds, want 1", len(got))
	}
	want := newHist()
	want.Merge(a.Latency)
	want.Merge(b.Latency)
	p := got[0]
	if !p.Latency.Equals(want) || p.Requests != 5 {
		t.Errorf("summed second: %d requests, p50 %d µs; want 5 and %d", p.Requests, p.Latency.ValueAtQuantile(50), want.ValueAtQuantile(50))
	}
	if p.ErrorClasses["timeout"] != 2 || p.LagMax != 5*time.Millisecond {
		t.Errorf("classes %v lag max %s; want timeout 2 and 5ms", p.ErrorClasses, p.LagMax)
	}
}
