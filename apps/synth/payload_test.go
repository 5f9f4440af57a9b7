package synth_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/svclab/svclab/apps/synth"
)

// TestResponseExact: every size but 1 has a response of exactly that many
// bytes, across the first two steps of the payload length's varint.
func TestResponseExact(t *testing.T) {
	for n := 0; n < 1<<15; n++ {
		want := n
		if n == 1 {
			want = 0 // no non-empty message is one byte
		}
		if got := proto.Size(synth.Response(n)); got != want {
			t.Fatalf("Response(%d) is %d bytes", n, got)
		}
	}
	for _, n := range []int{2097153, 2097154, 2097155, 2097156} {
		if got := proto.Size(synth.Response(n)); got != n {
			t.Errorf("Response(%d) is %d bytes", n, got)
		}
	}
}
