package spec

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestErrorsJoin: the errors of a spec come flattened, each once, in file
// order (those without a line first), and at most MaxErrors with a count
// of the rest, which a second Join keeps.
func TestErrorsJoin(t *testing.T) {
	at := func(line int, msg string) error {
		return &Error{File: "x.toml", Line: line, Key: "k", Err: errors.New(msg)}
	}
	tests := []struct {
		name string
		in   []error
		want []string
	}{
		{"none", []error{nil, nil}, nil},
		{"sorted by line", []error{at(9, "c"), errors.Join(at(3, "b"), nil), at(1, "a")},
			[]string{"x.toml:1: k: a", "x.toml:3: k: b", "x.toml:9: k: c"}},
		{"repeats once", []error{at(2, "same"), errors.Join(at(2, "same"), at(2, "other")), at(2, "same")},
			[]string{"x.toml:2: k: same", "x.toml:2: k: other"}},
		{"flag and file first", []error{at(4, "late"), &Error{Flag: "--set a=1", Key: "a", Err: errors.New("bad")}, errors.New("plain")},
			[]string{"--set a=1: a: bad", "plain", "x.toml:4: k: late"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Join(tc.in...)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Join = %v, want nil", err)
				}
				return
			}
			if got := strings.Split(err.Error(), "\n"); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("Join = %q, want %q", got, tc.want)
			}
		})
	}

	var es Errors
	for i := range maxKept + 100 {
		es.Add(at(maxKept+100-i, fmt.Sprintf("e%d", i)))
		es.Add(at(maxKept+100-i, fmt.Sprintf("e%d", i))) // a repeat counts once
	}
	parts := Unjoin(es.Err())
	if len(parts) != MaxErrors+1 || !strings.HasSuffix(parts[MaxErrors].Error(), fmt.Sprintf("and %d more errors", maxKept+100-MaxErrors)) {
		t.Fatalf("got %d errors, the last %v; want %d and a count of the rest", len(parts), parts[len(parts)-1], MaxErrors+1)
	}
	// Joined again, as a caller adds its own, the count stays.
	again := Unjoin(Join(es.Err(), at(1, "first")))
	if !strings.HasPrefix(again[0].Error(), "x.toml:1: k: first") || !strings.HasSuffix(again[len(again)-1].Error(), fmt.Sprintf("and %d more errors", maxKept+100-MaxErrors+1)) {
		t.Errorf("joined again: first %v, last %v", again[0], again[len(again)-1])
	}
}

// TestAddLater: a later check's errors are dropped at the keys found wrong
// before it (it saw their defaults), and at a missing key beside one (a
// misspelling's), but never for one another, as the errors of one check
// all are about what it saw.
func TestAddLater(t *testing.T) {
	s, err := Parse("x.toml", []byte("[load]\nrte = 1\nduration = \"x\"\npaths = [\"a\", \"b\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		before []string // keys found wrong first
		later  []string // keys of the later check's errors
		want   []string // keys reported
	}{
		{"at a wrong key", []string{"load.duration"}, []string{"load.duration"}, []string{"load.duration"}},
		{"inside a wrong key", []string{"load.paths"}, []string{"load.paths[1]"}, []string{"load.paths"}},
		{"around a wrong key", []string{"load.paths[1]"}, []string{"load.paths"}, []string{"load.paths[1]"}},
		{"a missing key beside a misspelt one", []string{"load.rte"}, []string{"load.rate"}, []string{"load.rte"}},
		{"a written key beside a wrong one", []string{"load.rte"}, []string{"load.duration"}, []string{"load.rte", "load.duration"}},
		{"a whole table is its own", []string{"load.rte"}, []string{"load"}, []string{"load", "load.rte"}},
		{"one check's errors side by side", nil, []string{"load.paths[0]", "load.paths[1]", "load.rate"}, []string{"load.paths[0]", "load.paths[1]", "load.rate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var es Errors
			for _, k := range tc.before {
				es.Add(s.Errorf(k, "wrong"))
			}
			var later []error
			for _, k := range tc.later {
				later = append(later, s.Errorf(k, "later"))
			}
			es.AddLater(errors.Join(later...))
			var got []string
			for _, e := range Unjoin(es.Err()) {
				var se *Error
				if errors.As(e, &se) {
					got = append(got, se.Key)
				}
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("reported %v, want %v", got, want)
			}
		})
	}
}
