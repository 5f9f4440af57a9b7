package english

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		noun string
		want string
	}{
		{0, "run", "0 runs"},
		{1, "run", "1 run"},
		{2, "run", "2 runs"},
		{1, "design point", "1 design point"},
		{12, "repetition", "12 repetitions"},
		{-1, "block", "-1 blocks"},
		{1, "process", "1 process"},
		{3, "process", "3 processes"},
		{2, "core", "2 cores"},
	} {
		if got := Count(tc.n, tc.noun); got != tc.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
}

func TestNoun(t *testing.T) {
	for n, want := range map[int]string{0: "runs", 1: "run", 2: "runs", 12: "runs"} {
		if got := Noun(n, "run"); got != want {
			t.Errorf("Noun(%d, run) = %q, want %q", n, got, want)
		}
	}
}

func TestAgree(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{0, "have"}, {1, "has"}, {2, "have"}} {
		if got := Agree(tt.n, "has", "have"); got != tt.want {
			t.Errorf("Agree(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
