package spec

import (
	"strings"
	"testing"
)

func TestByteSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{"16MiB", 16 << 20, ""},
		{"16MB", 16_000_000, ""},
		{"512KiB", 512 << 10, ""},
		{"1.5GiB", 3 << 29, ""},
		{" 64KiB ", 64 << 10, ""},
		{"100B", 100, ""},
		{"512", 0, `needs a unit, e.g. "512MiB"`},
		{"lots", 0, "not a size"},
		{"-1MiB", 0, "not a size"},
		{"99999999999EiB", 0, "not a size"},
	} {
		var b ByteSize
		err := b.UnmarshalText([]byte(tc.in))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.err == "" && int64(b) != tc.want:
			t.Errorf("%q = %d, want %d", tc.in, b, tc.want)
		}
		if tc.err == "" {
			var back ByteSize
			if err := back.UnmarshalText([]byte(b.String())); err != nil || back != b {
				t.Errorf("%q: String %q reads back as %d (%v)", tc.in, b.String(), back, err)
			}
		}
	}
}
