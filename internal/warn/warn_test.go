package warn

import (
	"encoding/json"
	"os"
	"testing"
)

func TestNewf(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  Warning
		want Warning
	}{
		{"formatted", Newf(Saturated, "completed %.1f req/s of %.1f offered", 18.7, 200.0),
			Warning{Saturated, "saturated: completed 18.7 req/s of 200.0 offered"}},
		{"plain rest", Newf(Traces, "%v", "none collected"), Warning{Traces, "traces: none collected"}},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, tc.got, tc.want)
		}
	}
}

func TestAbout(t *testing.T) {
	for _, tc := range []struct {
		in   Warning
		want string
	}{
		{Newf(Stalled, "no answer for 1.5 s"), "stalled: generator 1/2: no answer for 1.5 s"},
		{Warning{Interrupted, "interrupted after 3.2 s of measurement"}, "generator 1/2: interrupted after 3.2 s of measurement"},
		{Warning{"", "something: else"}, "generator 1/2: something: else"},
	} {
		got := tc.in.About("generator 1/2")
		if got.Kind != tc.in.Kind || got.Text != tc.want {
			t.Errorf("%+v.About: %+v, want kind %q text %q", tc.in, got, tc.in.Kind, tc.want)
		}
	}
}

func TestFind(t *testing.T) {
	ws := []Warning{Newf(GeneratorLag, "a"), Newf(Stalled, "first"), Newf(Stalled, "second")}
	for _, tc := range []struct {
		kind Kind
		ok   bool
		text string
	}{
		{Stalled, true, "stalled: first"},
		{GeneratorLag, true, "generator_lag: a"},
		{Saturated, false, ""},
	} {
		w, ok := Find(ws, tc.kind)
		if ok != tc.ok || w.Text != tc.text {
			t.Errorf("Find(%s) = %+v, %v; want %q, %v", tc.kind, w, ok, tc.text, tc.ok)
		}
	}
}

// legacy is testdata/legacy.json: old-form warnings and their kinds. The
// analysis's test reads the same file, so both derivations agree.
func legacy(t *testing.T) []Warning {
	t.Helper()
	b, err := os.ReadFile("testdata/legacy.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []Warning
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatalf("testdata/legacy.json: %v", err)
	}
	return cases
}

func TestParse(t *testing.T) {
	for _, c := range legacy(t) {
		if got := Parse(c.Text); got != c {
			t.Errorf("Parse(%q) = kind %q, want %q", c.Text, got.Kind, c.Kind)
		}
	}
}

func TestJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []Warning
		err  bool
	}{
		{"new form", `[{"kind": "saturated", "text": "saturated: completed 1.0 req/s"}, {"kind": "interrupted", "text": "interrupted after 1.0 s of measurement"}]`,
			[]Warning{{Saturated, "saturated: completed 1.0 req/s"}, {Interrupted, "interrupted after 1.0 s of measurement"}}, false},
		{"old form", `["saturated: completed 1.0 req/s", "interrupted after 1.0 s of measurement", "3 span(s) lost their parent: spans were dropped"]`,
			[]Warning{{Saturated, "saturated: completed 1.0 req/s"}, {Interrupted, "interrupted after 1.0 s of measurement"}, {SpansDropped, "3 span(s) lost their parent: spans were dropped"}}, false},
		{"a kind the text does not start with is kept", `[{"kind": "stalled", "text": "no prefix"}]`, []Warning{{Stalled, "no prefix"}}, false},
		{"mixed", `["stalled: x", {"kind": "metrics", "text": "metrics: y"}]`, []Warning{{Stalled, "stalled: x"}, {Metrics, "metrics: y"}}, false},
		{"a number", `[3]`, nil, true},
		{"a bad string", `["\x"]`, nil, true},
	} {
		var got []Warning
		err := json.Unmarshal([]byte(tc.in), &got)
		if (err != nil) != tc.err {
			t.Errorf("%s: error %v, want error %v", tc.name, err, tc.err)
			continue
		}
		if tc.err {
			continue
		}
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: [%d] %+v, want %+v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
}

// TestJSONRoundTrip: what svclab writes is the new form, and reads back
// the same, whatever the text.
func TestJSONRoundTrip(t *testing.T) {
	ws := append(legacy(t), Newf(GeneratorBottleneck, "x"))
	b, err := json.Marshal(ws)
	if err != nil {
		t.Fatal(err)
	}
	var fields []map[string]string
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	if fields[0]["kind"] != "generator_bottleneck" || fields[0]["text"] != ws[0].Text || len(fields[0]) != 2 {
		t.Errorf("encoded %v: want the keys kind and text", fields[0])
	}
	var back []Warning
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for i := range ws {
		if back[i] != ws[i] {
			t.Errorf("[%d] read back %+v, wrote %+v", i, back[i], ws[i])
		}
	}
}
