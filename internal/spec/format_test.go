package spec

import "testing"

func TestFormatValue(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{"grpc", "grpc"},
		{int64(3), "3"},
		{0.5, "0.5"},
		{true, "true"},
		{map[string]any{"memory": "256MiB", "cpu": 0.5}, `{cpu = 0.5, memory = "256MiB"}`},
		{map[string]any{"vm1-vm2": map[string]any{"latency": "2ms"}}, `{vm1-vm2 = {latency = "2ms"}}`},
		{map[string]any{"a b": int64(1)}, `{"a b" = 1}`},
		{[]any{"frontend", "cart"}, `["frontend", "cart"]`},
		{map[string]any{}, "{}"},
	} {
		if got := FormatValue(c.v); got != c.want {
			t.Errorf("FormatValue(%#v) = %s, want %s", c.v, got, c.want)
		}
	}
}
