package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/svclab/svclab/internal/procgroup"
	"github.com/svclab/svclab/internal/tempdir"
)

// GeneratorsOptions are the parts of a run over several generator
// processes that are not load settings.
type GeneratorsOptions struct {
	// Executable is the svclab binary each generator runs as
	// `svclab load --shard I/N`.
	Executable string
	// Progress, when set, is called once a second with the generators'
	// figures summed (percentiles and lag: the slowest generator's; the
	// latency histograms merged).
	Progress func(Progress)
	// Env is added to each generator's environment.
	Env []string
	// Args are added to each generator's command line (--allow-remote).
	Args []string
	// Started, when set, is called with each generator's PID once it
	// runs (for resource sampling).
	Started func(shard Shard, pid int)
}

// StartDelay is how long after the generators are started their load
// begins (--start-at): time for every one to start, calibrate its timer
// (half a second) and open its target, so that they begin together.
const StartDelay = 2 * time.Second

// RunGenerators runs cfg split over cfg.GeneratorCount() processes, each
// `svclab load --shard I/N`, started together, and merges their results
// (Merge). The target must be one a process can reach by itself (a URL,
// or host:port for gRPC). A generator that fails ends the others and
// fails the run with its stderr tail; nothing is left running and the
// generators' directories are removed once merged.
func RunGenerators(ctx context.Context, cfg Config, opt GeneratorsOptions) (*Result, error) {
	n := cfg.GeneratorCount()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Target == "" {
		return nil, errors.New("load: several generators need a target each can reach (load.target)")
	}
	if opt.Executable == "" {
		return nil, errors.New("load: several generators: no svclab executable to run them")
	}
	if cfg.Seed == 0 {
		// One seed for all, so the generators' streams differ (Share
		// derives each one's) and the run can be repeated.
		cfg.Seed = time.Now().UnixNano()
	}
	tmp, err := tempdir.MkdirTemp("generators-")
	if err != nil {
		return nil, fmt.Errorf("load: generators: %w", err)
	}
	defer os.RemoveAll(tmp)
	child := cfg
	child.Generators = nil
	child.Thresholds = nil // checked on the merged result
	b, err := toml.Marshal(struct {
		Load Config `toml:"load"`
	}{child})
	if err != nil {
		return nil, fmt.Errorf("load: generators: encoding their settings: %w", err)
	}
	file := filepath.Join(tmp, "load.toml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		return nil, fmt.Errorf("load: generators: %w", err)
	}

	startAt := time.Now().Add(StartDelay)
	gens := make([]*generatorProc, n)
	dirs := make([]string, n)
	var startErr error
	for i := range n {
		dirs[i] = filepath.Join(tmp, fmt.Sprintf("gen-%d", i))
		g, err := startGenerator(opt, Shard{i, n}, file, dirs[i], cfg.Target, startAt)
		if err != nil {
			startErr = fmt.Errorf("load: starting generator %d/%d: %w", i, n, err)
			break
		}
		gens[i] = g
		if opt.Started != nil {
			opt.Started(g.shard, g.cmd.Process.Pid)
		}
	}
	agg := newProgressSum(n, opt.Progress)
	var wg sync.WaitGroup
	failed := make(chan *generatorProc, n)
	for _, g := range gens {
		if g == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.readProgress(agg)
			g.err = g.group.Wait()
			close(g.done)
			if g.err != nil {
				failed <- g
			}
		}()
	}
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()

	var runErr error
	if startErr != nil {
		runErr = startErr
	}
	stopAll := func() {
		for _, g := range gens {
			if g != nil {
				g.stop()
			}
		}
	}
	if runErr != nil {
		stopAll()
	}
wait:
	for {
		select {
		case <-allDone:
			break wait
		case g := <-failed:
			if runErr == nil && ctx.Err() == nil {
				runErr = g.failure()
			}
			stopAll()
		case <-ctx.Done():
			stopAll()
			<-allDone
			break wait
		}
	}
	if runErr != nil {
		return nil, runErr
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("load: run interrupted: %w", ctx.Err())
	}
	for _, g := range gens {
		if g.err != nil {
			return nil, g.failure()
		}
	}
	return Merge(dirs...)
}

// generatorProc is one running `svclab load --shard I/N`.
type generatorProc struct {
	shard Shard
	cmd   *exec.Cmd
	// group signals the generator's process group until it is reaped,
	// and reaps it; what it leaves in its group ends with it.
	group  *procgroup.Leader
	stdout io.ReadCloser
	tail   *tailBuffer
	done   chan struct{}
	err    error
	once   sync.Once
}

func startGenerator(opt GeneratorsOptions, s Shard, file, dir, target string, startAt time.Time) (*generatorProc, error) {
	args := append([]string{"load", "-f", file, "--shard", s.String(), "--dir", dir,
		"--start-at", strconv.FormatInt(startAt.UnixNano(), 10), "--progress-json"}, opt.Args...)
	cmd := exec.Command(opt.Executable, append(args, target)...)
	cmd.Env = append(os.Environ(), opt.Env...)
	// Its own process group, killed with svclab: a generator must never
	// outlive the run that started it, even one ended by kill -9.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	g := &generatorProc{shard: s, cmd: cmd, group: procgroup.New(cmd), tail: &tailBuffer{max: 4096}, done: make(chan struct{})}
	g.group.EndGroup()
	cmd.Stderr = g.tail
	var err error
	if g.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return g, nil
}

// readProgress reads the generator's progress lines (JSON, one a second)
// until it closes its output.
func (g *generatorProc) readProgress(sum *progressSum) {
	sc := bufio.NewScanner(g.stdout)
	sc.Buffer(nil, 1<<20) // a line carries the second's latency histogram
	for sc.Scan() {
		var p Progress
		if json.Unmarshal(sc.Bytes(), &p) == nil {
			sum.add(p)
		}
	}
	_, _ = io.Copy(io.Discard, g.stdout)
}

// stop ends the generator: SIGTERM to its group, SIGKILL if it is still
// there two seconds later. Safe to call more than once and after it
// ended: a reaped generator's group gets nothing (procgroup).
func (g *generatorProc) stop() {
	g.once.Do(func() {
		_ = g.group.Signal(syscall.SIGTERM)
		go func() {
			select {
			case <-g.done:
			case <-time.After(2 * time.Second):
				_ = g.group.Signal(syscall.SIGKILL)
			}
		}()
	})
}

// failure says how the generator failed, with the end of its stderr.
func (g *generatorProc) failure() error {
	tail := strings.TrimSpace(g.tail.String())
	if tail == "" {
		tail = "(no output)"
	}
	return fmt.Errorf("load: generator %s failed: %v; its stderr ends:\n%s", g.shard, g.err, tail)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = t.buf[over:]
		if i := bytes.IndexByte(t.buf, '\n'); i >= 0 && i < len(t.buf)-1 {
			t.buf = t.buf[i+1:]
		}
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// progressSum adds up the generators' progress reports of each second and
// passes the sum on once every generator has reported it.
type progressSum struct {
	mu   sync.Mutex
	n    int
	out  func(Progress)
	secs map[progressKey]*progressAcc
}

type progressKey struct {
	warmup bool
	tenths int64
}

type progressAcc struct {
	p    Progress
	seen int
}

func newProgressSum(n int, out func(Progress)) *progressSum {
	return &progressSum{n: n, out: out, secs: map[progressKey]*progressAcc{}}
}

func (s *progressSum) add(p Progress) {
	if s.out == nil {
		return
	}
	k := progressKey{p.Warmup, p.Elapsed.Round(100*time.Millisecond).Milliseconds() / 100}
	s.mu.Lock()
	a, ok := s.secs[k]
	if !ok {
		a = &progressAcc{p: Progress{Elapsed: p.Elapsed, Warmup: p.Warmup}}
		s.secs[k] = a
	}
	a.seen++
	q := &a.p
	q.Requests += p.Requests
	q.Errors += p.Errors
	q.RPS += p.RPS
	q.TotalRequests += p.TotalRequests
	q.TotalErrors += p.TotalErrors
	q.LateSends += p.LateSends
	q.Dropped += p.Dropped
	q.P50 = max(q.P50, p.P50)
	q.P99 = max(q.P99, p.P99)
	q.LagP99 = max(q.LagP99, p.LagP99)
	q.LagMax = max(q.LagMax, p.LagMax)
	for c, n := range p.ErrorClasses {
		if q.ErrorClasses == nil {
			q.ErrorClasses = map[string]int64{}
		}
		q.ErrorClasses[c] += n
	}
	if p.Latency != nil {
		if q.Latency == nil {
			q.Latency = newHist()
		}
		q.Latency.Merge(p.Latency)
	}
	done := a.seen == s.n
	if done {
		delete(s.secs, k)
	}
	s.mu.Unlock()
	if done {
		s.out(a.p)
	}
}
