package registry_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/svclab/svclab/internal/registry"
)

func TestRegistry(t *testing.T) {
	r := registry.New[int]("number")
	if _, err := r.Lookup("one"); err == nil || err.Error() != `unknown number "one" (known: none)` {
		t.Errorf("Lookup in an empty registry: %v", err)
	}
	r.Register("two", 2)
	r.Register("one", 1)
	if got := r.Names(); !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("Names() = %v, want [one two]", got)
	}
	if v, err := r.Lookup("two"); err != nil || v != 2 {
		t.Errorf("Lookup(two) = %d, %v", v, err)
	}
	_, err := r.Lookup("three")
	if err == nil || err.Error() != `unknown number "three" (known: one, two)` {
		t.Errorf("Lookup(three) error = %v", err)
	}
	defer func() {
		p := recover()
		if s, _ := p.(string); !strings.Contains(s, `number "one" registered twice`) {
			t.Errorf("second Register of one: panic %v", p)
		}
	}()
	r.Register("one", 11)
}
