package synth

import (
	"strings"
	"sync/atomic"

	"google.golang.org/protobuf/encoding/protowire"

	synthpb "github.com/svclab/svclab/proto/synth"
)

// fill is the text payloads are cut from: slicing a string shares its
// bytes, so an answer costs no copy of its own before the transport's. It
// grows to the longest answer asked for, by powers of two up to maxFill,
// so that a host answering 100 bytes holds 128 of them rather than a
// MiB (every svclab process links this package; a host of 100 small
// services split held 1 MiB more each).
var fill atomic.Pointer[string]

// maxFill bounds fill; a longer payload is made for its answer alone.
const maxFill = 1 << 20

// padSize is the encoded size of CallResponse.pad set: a tag and a byte.
const padSize = 2

// Response returns the response whose protobuf encoding is exactly size
// bytes (0 for a size below 2, which no non-empty message has).
func Response(size int) *synthpb.CallResponse {
	switch {
	case size < padSize:
		return &synthpb.CallResponse{}
	case size == padSize:
		return &synthpb.CallResponse{Pad: true}
	}
	if n, ok := payloadLen(size); ok {
		return &synthpb.CallResponse{Payload: text(n)}
	}
	// One size at each step of the length's varint has no payload
	// length; the pad field's two bytes make it up.
	n, _ := payloadLen(size - padSize)
	return &synthpb.CallResponse{Payload: text(n), Pad: true}
}

// payloadLen is the payload length n whose field (tag, varint length,
// n bytes) is size bytes, if there is one.
func payloadLen(size int) (int, bool) {
	const tag = 1 // field 1, wire type 2
	for k := 1; k <= 10; k++ {
		n := size - tag - k
		// proto3 leaves an empty string out, so n = 0 is no field.
		if n > 0 && protowire.SizeVarint(uint64(n)) == k {
			return n, true
		}
	}
	return 0, false
}

func text(n int) string {
	f := fill.Load()
	if f != nil && n <= len(*f) {
		return (*f)[:n]
	}
	if n > maxFill {
		return strings.Repeat("x", n)
	}
	size := 64
	for size < n {
		size *= 2
	}
	grown := strings.Repeat("x", size)
	// Another answer may have grown it meanwhile; keep the longer.
	for f == nil || len(*f) < size {
		if fill.CompareAndSwap(f, &grown) {
			break
		}
		f = fill.Load()
	}
	return grown[:n]
}
