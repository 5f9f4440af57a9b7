package chain

import (
	"errors"
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
		if got := errorKeys(tc.c.Validate()); !slices.Equal(got, tc.keys) {
			t.Errorf("%+v: errors about %v, want %v", tc.c, got, tc.keys)
		}
	}
}

// errorKeys are the keys err's KeyErrors name, in order.
func errorKeys(err error) []string {
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var keys []string
	for _, e := range errs {
		if ke := (*spec.KeyError)(nil); errors.As(e, &ke) {
			keys = append(keys, ke.Key)
		}
	}
	return keys
}
