package chain

import (
	"slices"
	"testing"

	"github.com/svclab/svclab/internal/spec"
)

// TestConfigErrors: every wrong key is reported, not only the first.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		keys []string
	}{
		{Config{Hops: 0, Payload: "huge"}, []string{"hops", "payload"}},
		{Config{Hops: MaxHops + 1, Payload: Small}, []string{"hops"}},
		{Config{Hops: 3, Payload: "huge"}, []string{"payload"}},
		{Config{Hops: 3, Payload: Large}, nil},
	} {
		if got := spec.ErrorKeys(tc.c.Validate()); !slices.Equal(got, tc.keys) {
			t.Errorf("%+v: errors about %v, want %v", tc.c, got, tc.keys)
		}
	}
}
