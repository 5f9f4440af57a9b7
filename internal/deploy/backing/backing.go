// Package backing runs the backing services apps declare (runtime.Backing):
// stateful services such as a database that components share, which are not
// components themselves. A Pool starts each kind of server once, keeps it
// for an experiment's runs, and before every deployment restores each
// backing service to its declared state, so that runs are independent
// while the server's start-up is paid once.
//
// The deployer, not the app, owns this lifecycle: an app that opened its
// own database would start one per replica and lose it with the process,
// and its start-up and reset would be measured as the app's.
package backing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/svclab/svclab/internal/deploy/backing/postgres"
	"github.com/svclab/svclab/internal/deploy/backing/redis"
	"github.com/svclab/svclab/internal/runtime"
)

// The PostgreSQL server's fixed resources, the same in every run (S1 gave
// its database a fixed 1 CPU and 4 GiB): room for 11 replicas of two
// services with pools of 10, and PostgreSQL's default buffer cache, which
// holds the shop's catalogue many times over.
const (
	MaxConnections = 250
	SharedBuffers  = "128MB"
)

// Kinds lists the backing kinds this package can run.
func Kinds() []string { return []string{runtime.BackingPostgres, runtime.BackingRedis} }

// Check reports, without starting anything, whether every backing service
// topo's app declares can run on this machine. Its error names the app
// and says what is missing.
func Check(topo *runtime.Topology) error { return check(topo, true) }

// CheckDeclared reports whether every backing service topo's app declares
// is one svclab can run, as Check does, without asking whether this
// machine has its programs: for a deployer that runs them elsewhere (a
// cluster's pods, from images).
func CheckDeclared(topo *runtime.Topology) error { return check(topo, false) }

func check(topo *runtime.Topology, local bool) error {
	var errs []error
	for _, b := range runtime.BackingsOf(topo) {
		switch b.Kind {
		case runtime.BackingPostgres:
			if !local {
				continue
			}
			if err := postgres.Check(); err != nil {
				errs = append(errs, fmt.Errorf("app %s needs PostgreSQL for its backing service %q: %w", topo.App.Name, b.Name, err))
			}
		case runtime.BackingRedis:
			if err := checkRedis(topo, b, local); err != nil {
				errs = append(errs, err)
			}
		default:
			errs = append(errs, fmt.Errorf("app %s: backing service %q has kind %q, which svclab cannot run (known: %s)", topo.App.Name, b.Name, b.Kind, strings.Join(Kinds(), ", ")))
		}
	}
	return errors.Join(errs...)
}

// Pool holds the backing servers of one experiment (or one deployment).
// Its methods are safe for concurrent use.
type Pool struct {
	log io.Writer

	mu        sync.Mutex
	pg        *postgres.Server
	redis     *redis.Server
	templates map[string]bool // template database names made in pg
	closed    bool
}

// NewPool returns an empty pool; log, when not nil, gets one line per
// server started or stopped.
func NewPool(log io.Writer) *Pool {
	if log == nil {
		log = io.Discard
	}
	return &Pool{log: log, templates: map[string]bool{}}
}

// Prepare starts the servers topos need and makes each declared state
// ready to copy, so that a server that cannot start fails before the first
// run rather than in each.
func (p *Pool) Prepare(ctx context.Context, topos ...*runtime.Topology) error {
	for _, t := range topos {
		for _, b := range runtime.BackingsOf(t) {
			if b.Kind == runtime.BackingRedis {
				if _, err := p.startRedis(ctx, b); err != nil {
					return err
				}
				continue
			}
			if _, err := p.template(ctx, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// Acquire restores every backing service topo's app declares to its
// declared state, starting servers as needed, and returns the environment
// (runtime.BackingEnv) that tells the hosts where each is.
func (p *Pool) Acquire(ctx context.Context, topo *runtime.Topology) ([]string, error) {
	var env []string
	for _, b := range runtime.BackingsOf(topo) {
		if b.Kind == runtime.BackingRedis {
			addr, err := p.acquireRedis(ctx, b)
			if err != nil {
				return nil, err
			}
			env = append(env, runtime.BackingEnv(b.Name)+"="+addr)
			continue
		}
		tmpl, err := p.template(ctx, b)
		if err != nil {
			return nil, err
		}
		p.mu.Lock()
		pg := p.pg
		p.mu.Unlock()
		db := "svclab_" + b.Name
		if err := pg.Reset(ctx, db, tmpl); err != nil {
			return nil, fmt.Errorf("backing service %s: reset: %w", b.Name, err)
		}
		env = append(env, runtime.BackingEnv(b.Name)+"="+pg.DSN(db))
	}
	return env, nil
}

// template returns the template database holding b's declared state,
// starting the server and making the template on first use.
func (p *Pool) template(ctx context.Context, b runtime.Backing) (string, error) {
	if b.Kind != runtime.BackingPostgres {
		return "", fmt.Errorf("backing service %q: unknown kind %q (known: %s)", b.Name, b.Kind, strings.Join(Kinds(), ", "))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return "", errors.New("backing: pool is closed")
	}
	if p.pg == nil {
		start := time.Now()
		pg, err := postgres.Start(ctx, postgres.Options{MaxConnections: MaxConnections, SharedBuffers: SharedBuffers})
		if err != nil {
			return "", fmt.Errorf("backing service %s: %w", b.Name, err)
		}
		p.pg = pg
		fmt.Fprintf(p.log, "backing: PostgreSQL started in %s (pid %d, %s)\n", time.Since(start).Round(time.Millisecond), pg.PID(), pg.Dir())
	}
	// Templates are keyed by their content, so an app config that changes
	// the seed between runs (a factor) gets its own.
	sum := sha256.Sum256([]byte(b.Setup))
	name := "svclab_tmpl_" + hex.EncodeToString(sum[:8])
	if !p.templates[name] {
		if err := p.pg.CreateTemplate(ctx, name, b.Setup); err != nil {
			return "", fmt.Errorf("backing service %s: %w", b.Name, err)
		}
		p.templates[name] = true
	}
	return name, nil
}

// Servers lists the PIDs of the running servers, for tests and listings.
func (p *Pool) Servers() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var pids []int
	if p.pg != nil {
		pids = append(pids, p.pg.PID())
	}
	if p.redis != nil {
		pids = append(pids, p.redis.PID())
	}
	return pids
}

// Close stops every server and removes its files. It is safe to call more
// than once.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	err := p.closeRedis(ctx)
	if p.pg == nil {
		return err
	}
	err = errors.Join(err, p.pg.Stop(ctx))
	fmt.Fprintf(p.log, "backing: PostgreSQL (pid %d) stopped\n", p.pg.PID())
	p.pg = nil
	clear(p.templates)
	return err
}

// Sweep removes what backing servers of dead svclab processes left; every
// svclab command calls it when it starts (see postgres.Sweep).
func Sweep() ([]string, error) {
	rs, err := postgres.Sweep()
	out, rerr := sweepRedis()
	err = errors.Join(err, rerr)
	for _, r := range rs {
		s := fmt.Sprintf("%s (its svclab, %s, is gone)", r.Path, r.Owner)
		if r.Killed > 0 {
			s += fmt.Sprintf("; killed its postmaster, pid %d", r.Killed)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out, err
}
