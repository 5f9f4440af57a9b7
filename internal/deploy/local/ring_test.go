package local

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/svclab/svclab/internal/deploy"
)

func TestRing(t *testing.T) {
	tests := []struct {
		n    int
		add  []string
		want []string
	}{
		{3, nil, []string{}},
		{3, []string{"a", "b"}, []string{"a", "b"}},
		{3, []string{"a", "b", "c"}, []string{"a", "b", "c"}},
		{3, []string{"a", "b", "c", "d", "e"}, []string{"c", "d", "e"}},
		{1, []string{"a", "b"}, []string{"b"}},
	}
	for _, tc := range tests {
		r := newRing(tc.n)
		for _, s := range tc.add {
			r.add(s)
		}
		if got := r.lines(); !slices.Equal(got, tc.want) {
			t.Errorf("ring(%d) after %v: %q, want %q", tc.n, tc.add, got, tc.want)
		}
	}
}

// TestReadCutsLongLines checks that a child printing a huge line without a
// newline costs at most maxLine bytes per recorded line.
func TestReadCutsLongLines(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &process{info: deploy.ProcessInfo{Name: "g"}, tail: newRing(10), readDone: make(chan struct{})}
	go p.read(r, nil)
	go func() {
		_, _ = w.WriteString(strings.Repeat("x", 3*maxLine+5) + "\nlast\n")
		_ = w.Close()
	}()
	<-p.readDone
	lines := p.Tail()
	if len(lines) != 5 || lines[4] != "last" {
		t.Fatalf("got %d lines ending %q, want the long line in 4 pieces and \"last\"", len(lines), lines[len(lines)-1])
	}
	for _, l := range lines {
		if len(l) > maxLine {
			t.Errorf("recorded a line of %d bytes, over %d", len(l), maxLine)
		}
	}
}
