package rpcops

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
		{Config{Op: "nope", StringLen: -1}, []string{"op", "string_len"}},
		{Config{Op: OpAll, StringLen: MaxStringLen + 1}, []string{"string_len"}},
		{Config{Op: "nope", StringLen: MinStringLen}, []string{"op"}},
		{Config{Op: Ops[0], StringLen: MinStringLen}, nil},
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
