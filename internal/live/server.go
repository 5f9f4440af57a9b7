package live

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// DefaultAddr is where --ui listens when given no address: loopback, on
// a port the kernel picks.
const DefaultAddr = "127.0.0.1:0"

// chartLib is the charting library's script in assets, put there by
// `make uplot`; without it the page says the charts are missing.
const chartLib = "uPlot.iife.min.js"

//go:embed assets page.html
var files embed.FS

var page = template.Must(template.ParseFS(files, "page.html"))

// Server serves a board's page, its events and its metrics.
type Server struct {
	board *Board
	ln    net.Listener
	srv   *http.Server
	// closing ends every event stream once it has sent what the board
	// holds, so that a client sees the end before the server stops.
	closing   chan struct{}
	closeOnce sync.Once
	serveErr  chan error
}

// Listen binds addr and serves board there until Close. An address that
// is not loopback is refused unless allowRemote: the page shows the
// system's internals and /metrics its figures to whoever reaches them.
func Listen(addr string, allowRemote bool, board *Board) (*Server, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	if !allowRemote {
		if err := checkLoopback(addr); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("live view: listening on %s: %w", addr, err)
	}
	s := &Server{board: board, ln: ln, closing: make(chan struct{}), serveErr: make(chan error, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("GET /events", s.events)
	mux.Handle("GET /metrics", metricsHandler(board))
	assets, _ := fs.Sub(files, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(assets)))
	s.srv = &http.Server{Handler: readOnly(mux), ReadHeaderTimeout: 10 * time.Second}
	go func() { s.serveErr <- s.srv.Serve(ln) }()
	return s, nil
}

// checkLoopback refuses a host that is not a loopback address or
// localhost; an empty host (":8080") is every interface.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("live view: address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("live view: %s is not a loopback address; pass --ui-allow-remote to serve it there", addr)
}

// readOnly answers anything but GET and HEAD with 405: no endpoint
// changes anything.
func readOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the live view is read-only", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// URL is the page's address.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/" }

// Close ends the board (if the command has not), lets each open page
// receive the rest of its events, and stops the server.
func (s *Server) Close() error {
	s.board.End(nil)
	s.closeOnce.Do(func() { close(s.closing) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close()
	}
	if serr := <-s.serveErr; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	_, err := fs.Stat(files, "assets/"+chartLib)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = page.Execute(w, struct{ Charts bool }{err == nil})
}

// events streams the board's events: every one so far (or after the
// Last-Event-ID a reconnecting EventSource sends), then each as it comes,
// until the work ends, the client leaves or the server closes.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	last, _ := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64)
	send := func(evs []event) error {
		for _, e := range evs {
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.seq, e.kind, e.data); err != nil {
				return err
			}
			last = e.seq
		}
		return rc.Flush()
	}
	for {
		evs, wake, done := s.board.since(last)
		if err := send(evs); err != nil || done {
			return
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			return
		case <-s.closing:
			// What came before the close still goes out.
			evs, _, _ := s.board.since(last)
			_ = send(evs)
			return
		}
	}
}
