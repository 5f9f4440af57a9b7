package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/svclab/svclab/internal/deploy/kube"
	"github.com/svclab/svclab/internal/load"
)

// Several generators (load.generators, docs/LOAD.md "Several
// generators"): `svclab load --generators N` starts N processes of
// `svclab load --shard I/N --dir DIR`, each running its share of the
// load, and merges what they wrote. A Kubernetes Job's pods run the same
// --shard command.

// maxStartAhead bounds how far ahead --start-at may be, so that a wrong
// clock or value cannot leave a generator waiting for days.
const maxStartAhead = time.Hour

func (o *loadOptions) addShardFlags(f *pflag.FlagSet) {
	f.StringVar(&o.shard, "shard", "", "run generator I of N (I/N, I from 0): this process's share of the load; needs --dir, where it writes what the merge reads")
	f.StringVar(&o.startAt, "start-at", "", "start the load at this moment (Unix time in ns, or RFC 3339), so that several generators start together")
	f.BoolVar(&o.progressJSON, "progress-json", false, "write the progress as one JSON object a second on stdout, and no table (for the process that started this one)")
	_ = f.MarkHidden("progress-json")
}

// shardOf reads --shard and replaces cfg by this generator's share of it.
func (o *loadOptions) shardOf(cfg *load.Config) (load.Shard, error) {
	if o.shard == "" {
		return load.Shard{}, nil
	}
	sh, err := load.ParseShard(o.shard)
	if err != nil {
		return sh, usageError{fmt.Errorf("--shard: %w", err)}
	}
	if o.dir == "" {
		return sh, usageError{errors.New("--shard needs --dir, where this generator writes what the merge reads")}
	}
	if n := cfg.GeneratorCount(); n > 1 && n != sh.Count {
		return sh, usageError{fmt.Errorf("--shard %s is one of %d generators, but load.generators is %d", o.shard, sh.Count, n)}
	}
	whole := *cfg
	whole.Generators = &sh.Count
	if err := whole.Validate(); err != nil {
		return sh, usageError{fmt.Errorf("--shard %s: %w", o.shard, err)}
	}
	*cfg = whole.Share(sh)
	return sh, nil
}

// startTime reads --start-at.
func (o *loadOptions) startTime() (time.Time, error) {
	if o.startAt == "" {
		return time.Time{}, nil
	}
	var t time.Time
	if ns, err := strconv.ParseInt(o.startAt, 10, 64); err == nil {
		t = time.Unix(0, ns)
	} else if t, err = time.Parse(time.RFC3339Nano, o.startAt); err != nil {
		return t, usageError{fmt.Errorf("--start-at: want Unix time in ns or RFC 3339, got %q", o.startAt)}
	}
	if ahead := time.Until(t); ahead > maxStartAhead {
		return t, usageError{fmt.Errorf("--start-at: %s is %s ahead, more than %s", o.startAt, ahead.Round(time.Second), maxStartAhead)}
	}
	return t, nil
}

// run runs the load: in this process, or over several generator
// processes when load.generators asks for them.
func (o *loadOptions) run(ctx context.Context, cfg load.Config, target *load.Target, opt load.Options) (*load.Result, error) {
	if cfg.GeneratorCount() == 1 || o.shard != "" {
		return load.Run(ctx, cfg, target, opt)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("--generators: the svclab binary to start them: %w", err)
	}
	gopt := load.GeneratorsOptions{Executable: exe, Progress: opt.Progress}
	if o.allowRemote {
		gopt.Args = append(gopt.Args, "--allow-remote")
	}
	return load.RunGenerators(ctx, cfg, gopt)
}

// finishShard writes a generator's directory for the merge. A generator
// whose requests all failed still ran: what it measured is the merge's
// to judge, as are the thresholds, so only a run that failed fails it.
func (o *loadOptions) finishShard(res *load.Result, sh load.Shard, runErr error, stdout io.Writer) error {
	if !o.progressJSON {
		if err := res.Table(stdout); err != nil {
			return err
		}
	}
	if err := res.WriteShard(o.dir, sh); err != nil {
		return fmt.Errorf("--dir: %w", err)
	}
	if os.Getenv(kube.ResultsEnv) != "" {
		// A load pod: its log is how the results leave it.
		if err := kube.EmitResults(stdout, o.dir, sh.String()); err != nil {
			return err
		}
	}
	return runErr
}

// jsonProgress writes each progress report as a line of JSON.
func jsonProgress(w io.Writer) func(load.Progress) {
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	return func(p load.Progress) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(p)
	}
}

// shareLine says what a generator's share of the load is, for its log.
func shareLine(cfg load.Config, at time.Time) string {
	var what string
	if cfg.Mode == load.Closed {
		what = fmt.Sprintf("%d users", cfg.Users)
	} else {
		what = fmt.Sprintf("%s arrivals/s", strconv.FormatFloat(cfg.Rate, 'f', -1, 64))
	}
	if len(cfg.Stages) > 0 {
		what += fmt.Sprintf(" and %d stages", len(cfg.Stages))
	}
	if cfg.Requests > 0 {
		what += fmt.Sprintf(", at most %d requests", cfg.Requests)
	}
	if !at.IsZero() {
		what += ", starting at " + at.UTC().Format(time.RFC3339Nano)
	}
	return what
}
