package spec

import (
	"fmt"
	"math"
	"strings"

	"github.com/dustin/go-humanize"
)

// ByteSize is a number of bytes written in TOML as a string with a unit,
// such as "16MiB" (binary, 2^20) or "16MB" (decimal, 10^6), as Kubernetes
// and most tools read them.
type ByteSize int64

// UnmarshalText parses a size with its unit. A bare number is refused, as
// a bare duration is: "512" could mean bytes or megabytes.
func (b *ByteSize) UnmarshalText(t []byte) error {
	text := strings.TrimSpace(string(t))
	if bareNumberRE.MatchString(text) {
		return fmt.Errorf("needs a unit, e.g. \"%sMiB\"", text)
	}
	n, err := humanize.ParseBytes(text)
	if err != nil {
		return fmt.Errorf("not a size (write e.g. \"512KiB\" or \"16MiB\"): %q", text)
	}
	if n > math.MaxInt64 {
		return fmt.Errorf("too large: %q", text)
	}
	*b = ByteSize(n)
	return nil
}

// MarshalText writes the size in binary units, exactly.
func (b ByteSize) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// String writes the size in the largest binary unit that divides it, so
// that it reads back to the same number.
func (b ByteSize) String() string {
	n := int64(b)
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}
