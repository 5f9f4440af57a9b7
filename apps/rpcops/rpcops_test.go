package rpcops

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
		{Config{Op: "nope", StringLen: -1}, []string{"op", "string_len"}},
		{Config{Op: OpAll, StringLen: MaxStringLen + 1}, []string{"string_len"}},
		{Config{Op: "nope", StringLen: MinStringLen}, []string{"op"}},
		{Config{Op: Ops[0], StringLen: MinStringLen}, nil},
	} {
		if got := spec.ErrorKeys(tc.c.Validate()); !slices.Equal(got, tc.keys) {
			t.Errorf("%+v: errors about %v, want %v", tc.c, got, tc.keys)
		}
	}
}
