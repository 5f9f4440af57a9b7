package load

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unicode"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// StatusError is an HTTP answer with an unexpected status code.
type StatusError struct{ Code int }

func (e *StatusError) Error() string { return "HTTP status " + strconv.Itoa(e.Code) }

// ClassError gives an error an explicit class.
type ClassError struct {
	Class string
	Err   error
}

func (e *ClassError) Error() string { return e.Class + ": " + e.Err.Error() }
func (e *ClassError) Unwrap() error { return e.Err }

func classed(class string, err error) error { return &ClassError{class, err} }

// Classify names the class of a failed request, as used in errors_by_class
// and the samples' status column: "http_503", "grpc_unavailable",
// "timeout", "connection", or "other". A nil error is "ok".
func Classify(err error) string {
	if err == nil {
		return "ok"
	}
	var ce *ClassError
	if errors.As(err, &ce) {
		return ce.Class
	}
	var se *StatusError
	if errors.As(err, &se) {
		return "http_" + strconv.Itoa(se.Code)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return "timeout"
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.OK && st.Code() != codes.Unknown {
		switch st.Code() {
		case codes.DeadlineExceeded:
			return "timeout"
		case codes.Canceled:
			return "canceled"
		}
		return "grpc_" + snake(st.Code().String())
	}
	if errors.Is(err, context.Canceled) {
		return "canceled"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	var oe *net.OpError
	if errors.As(err, &oe) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed) {
		return "connection"
	}
	if _, ok := status.FromError(err); ok {
		return "grpc_unknown"
	}
	return "other"
}

// snake turns "DeadlineExceeded" into "deadline_exceeded".
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
