package experiment

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/svclab/svclab/internal/deploy/hostentry"
	"github.com/svclab/svclab/internal/hostclock"
	"github.com/svclab/svclab/internal/spec"
	"github.com/svclab/svclab/internal/tempdir"
)

// Store is one experiment's results directory (see docs/RESULTS.md).
type Store struct {
	Dir string
}

// RunDir is where a committed run lives.
func (st *Store) RunDir(id string) string { return filepath.Join(st.Dir, "runs", id) }

const tmpPrefix = ".tmp-"

// ExperimentFile is experiment.json.
type ExperimentFile struct {
	Name          string         `json:"name"`
	SvclabVersion string         `json:"svclab_version"`
	SvclabCommit  string         `json:"svclab_commit"`
	Created       string         `json:"created"`
	SpecPath      string         `json:"spec_path"`
	SpecText      string         `json:"spec_text"`
	SpecSHA256    string         `json:"spec_sha256"`
	Overrides     []string       `json:"overrides"`
	Seed          int64          `json:"seed"`
	Design        DesignInfo     `json:"design"`
	Factors       []FactorInfo   `json:"factors"`
	Response      map[string]any `json:"response"`
	Runs          []PlannedRun   `json:"runs"`
	// HostBinary is the program, with its arguments, that the local and
	// netns deployers start for each host: the lean host binary beside
	// svclab, or svclab with "host" (hostentry.Command), whose hosts hold
	// about twice the memory.
	HostBinary string `json:"host_binary,omitempty"`
	// Machine keeps the key "host" so stores written before the rename read.
	Machine Machine `json:"host"`
	// HostTimer is the host's timer wake-up lateness measured before the
	// first run: the floor each run's generator audit is judged against.
	HostTimer *hostclock.Calibration `json:"host_timer,omitempty"`
	// Isolation is the CPUs the load generator and the system under test
	// ran on (experiment.isolation).
	Isolation *Isolation `json:"isolation,omitempty"`
	// Spec is the spec as the experiment ran it, --set overrides applied:
	// the analysis reads [[experiment.questions]] and experiment.until
	// from it.
	Spec map[string]any `json:"spec,omitempty"`
	// Sequential and Stopped are an until = "decided" experiment's
	// budget and how it ended (sequential.go).
	Sequential *SequentialInfo `json:"sequential,omitempty"`
	Stopped    *Stopped        `json:"stopped,omitempty"`
}

// DesignInfo is experiment.json's "design".
type DesignInfo struct {
	Kind        string            `json:"kind"`
	Generators  map[string]string `json:"generators,omitempty"`
	Aliases     []string          `json:"aliases,omitempty"`
	Resolution  int               `json:"resolution,omitempty"`
	Order       string            `json:"order"`
	Repetitions int               `json:"repetitions"`
	WarmupS     float64           `json:"warmup_s"`
	DurationS   float64           `json:"duration_s"`
	CooldownS   float64           `json:"cooldown_s"`
}

// FactorInfo is one entry of experiment.json's "factors".
type FactorInfo struct {
	Name   string `json:"name"`
	Letter string `json:"letter"`
	Levels []any  `json:"levels"`
}

// PlannedRun is one entry of experiment.json's "runs".
type PlannedRun struct {
	ID         string         `json:"id"`
	Index      int            `json:"index"`
	Repetition int            `json:"repetition"`
	Levels     map[string]any `json:"levels"`
	Spec       map[string]any `json:"spec"`
}

// NewExperimentFile builds experiment.json for a plan.
func NewExperimentFile(p *Plan, version, commit string, now time.Time) ExperimentFile {
	ef, n := experimentHeader(p, version, commit, now)
	ef.Runs = plannedRuns(p, n)
	return ef
}

// experimentHeader is experiment.json for a plan but its runs, and how
// many of the plan's runs it lists.
func experimentHeader(p *Plan, version, commit string, now time.Time) (ExperimentFile, int) {
	e := p.Spec.Experiment
	ef := ExperimentFile{
		Name:          e.Name,
		SvclabVersion: version,
		SvclabCommit:  commit,
		Created:       now.UTC().Format(time.RFC3339),
		SpecPath:      p.Spec.Path,
		SpecText:      string(p.Spec.Source),
		SpecSHA256:    SpecHash(p.Spec),
		Overrides:     append([]string{}, p.Spec.Overrides...),
		Seed:          p.Seed,
		Design: DesignInfo{
			Kind: p.Design.Kind, Aliases: p.Design.Aliases, Resolution: p.Design.Resolution,
			Order: e.Order, Repetitions: e.Repetitions,
			WarmupS: p.Warmup.Seconds(), DurationS: p.Duration.Seconds(), CooldownS: p.Cooldown.Seconds(),
		},
		Response:   map[string]any{"metric": e.Response, "operation": "total"},
		Machine:    ReadMachine(),
		HostBinary: hostBinary(),
		Factors:    []FactorInfo{},
		Spec:       p.Spec.Tree(),
	}
	if len(e.Generators) > 0 {
		ef.Design.Generators = map[string]string{}
		for _, g := range e.Generators {
			ef.Design.Generators[g.Letter] = g.Word
		}
	}
	for _, f := range p.Design.Factors {
		ef.Factors = append(ef.Factors, FactorInfo{Name: f.Name, Letter: f.Letter, Levels: f.Levels})
	}
	n := len(p.Runs)
	if p.Sequential() {
		// A sequential experiment lists the runs of the blocks it has
		// begun (sequential.go adds each as it starts), not every block
		// its budget might allow.
		n = p.BlockSize()
		ef.Design.Repetitions = 1
		ef.Sequential = &SequentialInfo{MaxRuns: e.MaxRuns, BudgetS: e.Budget.D().Seconds(), Blocks: 1}
	}
	return ef, n
}

// plannedRuns are the first n runs of the plan as experiment.json lists
// them.
func plannedRuns(p *Plan, n int) []PlannedRun {
	out := make([]PlannedRun, 0, n)
	for _, r := range p.Runs[:n] {
		out = append(out, plannedRun(p, r))
	}
	return out
}

func plannedRun(p *Plan, r Run) PlannedRun {
	return PlannedRun{ID: r.ID, Index: r.Index, Repetition: r.Repetition, Levels: r.Levels, Spec: p.SpecOf(r).Tree()}
}

// createPlannedStore is CreateStore for a plan about to run: experiment.json
// (ef, experimentHeader's, without its runs) lists the first n runs of p,
// each written as it is made, so that the effective specs of a million
// runs, a gigabyte of JSON, are never in memory at once. The file is the
// one CreateStore writes for NewExperimentFile, byte for byte.
func createPlannedStore(root string, ef ExperimentFile, p *Plan, n int, now time.Time) (*Store, error) {
	return createStore(root, ef.Name, now, func(path string) error {
		return writeAtomic(path, func(w io.Writer) error { return writeListing(w, ef, p, n) })
	})
}

// writeListing writes experiment.json to w as writeJSON would write ef
// with the first n runs of p as its Runs.
func writeListing(w io.Writer, ef ExperimentFile, p *Plan, n int) error {
	ef.Runs = []PlannedRun{}
	var head bytes.Buffer
	enc := json.NewEncoder(&head)
	enc.SetIndent("", "  ")
	if err := enc.Encode(ef); err != nil {
		return fmt.Errorf("encode experiment.json: %w", err)
	}
	// A newline inside a string is written \n, so this is the key alone.
	const empty = "\n  \"runs\": [],"
	before, after, ok := bytes.Cut(head.Bytes(), []byte(empty))
	if !ok {
		return fmt.Errorf("encode experiment.json: no %q in its encoding", empty)
	}
	bw := bufio.NewWriter(w)
	bw.Write(before)
	bw.WriteString(empty[:len(empty)-2])
	for i, r := range p.Runs[:n] {
		if i > 0 {
			bw.WriteString(",")
		}
		b, err := json.MarshalIndent(plannedRun(p, r), "    ", "  ")
		if err != nil {
			return fmt.Errorf("encode experiment.json's run %s: %w", r.ID, err)
		}
		bw.WriteString("\n    ")
		bw.Write(b)
	}
	if n > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("],")
	bw.Write(after)
	return bw.Flush()
}

// SpecHash is the hex SHA-256 of a spec's bytes followed by its --set
// overrides, one per line; --resume compares it.
func SpecHash(s *spec.Spec) string {
	h := sha256.New()
	h.Write(s.Source)
	for _, o := range s.Overrides {
		h.Write([]byte("\n--set " + o))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// CreateStore makes a new results directory under root, named for the
// experiment and the time, and writes experiment.json into it.
func CreateStore(root string, ef ExperimentFile, now time.Time) (*Store, error) {
	return createStore(root, ef.Name, now, func(path string) error { return writeJSONAtomic(path, ef) })
}

// createStore makes the results directory of the experiment name and has
// write write its experiment.json at path.
func createStore(root, name string, now time.Time, write func(path string) error) (*Store, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("create results root: %w", err)
	}
	base := name + "-" + now.Format("20060102-150405")
	dir := filepath.Join(root, base)
	for i := 2; ; i++ {
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || i > 100 {
			return nil, fmt.Errorf("create results directory: %w", err)
		}
		dir = filepath.Join(root, fmt.Sprintf("%s-%d", base, i))
	}
	if err := os.Mkdir(filepath.Join(dir, "runs"), 0o755); err != nil {
		return nil, fmt.Errorf("create runs directory: %w", err)
	}
	st := &Store{Dir: dir}
	if err := write(filepath.Join(dir, "experiment.json")); err != nil {
		return nil, err
	}
	return st, syncDir(root)
}

// OpenStore opens an existing results directory for --resume. It reads
// experiment.json and removes the directories of runs that were in flight
// when their svclab died (CleanStore).
func OpenStore(dir string) (*Store, *ExperimentFile, error) {
	ef, err := readExperimentFile(dir)
	if err != nil {
		return nil, nil, err
	}
	if _, err := CleanStore(dir); err != nil {
		return nil, nil, err
	}
	return &Store{Dir: dir}, ef, nil
}

// CleanStore removes the temporary directories of runs (runs/.tmp-ID)
// whose writer is dead, and returns them. A run another live svclab is
// still writing is an error: two processes must not run one experiment.
func CleanStore(dir string) ([]string, error) {
	runs := filepath.Join(dir, "runs")
	entries, err := os.ReadDir(runs)
	if err != nil {
		return nil, fmt.Errorf("read runs: %w", err)
	}
	self := tempdir.Self()
	var removed []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		path := filepath.Join(runs, e.Name())
		// A directory with no owner record was left by a svclab that
		// predates the record, or died between making it and writing it.
		if dead, owner := tempdir.Orphaned(path, 0); !dead && owner != self {
			return removed, fmt.Errorf("run %s in %s is being written by svclab %s, which is still running; wait for it to end or stop it", strings.TrimPrefix(e.Name(), tmpPrefix), dir, owner)
		}
		if err := os.RemoveAll(path); err != nil {
			return removed, fmt.Errorf("remove unfinished run %s: %w", e.Name(), err)
		}
		removed = append(removed, path)
	}
	return removed, nil
}

// Committed lists the IDs of runs committed so far, sorted.
func (st *Store) Committed() (map[string]bool, error) {
	entries, err := os.ReadDir(filepath.Join(st.Dir, "runs"))
	if err != nil {
		return nil, fmt.Errorf("read runs: %w", err)
	}
	out := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), tmpPrefix) {
			out[e.Name()] = true
		}
	}
	return out, nil
}

// RunWriter collects one run's files in a temporary directory until Commit.
type RunWriter struct {
	st  *Store
	id  string
	Dir string // the temporary directory: write the run's files here
}

// BeginRun starts writing a run. A leftover temporary directory of the
// same run is discarded first.
func (st *Store) BeginRun(id string) (*RunWriter, error) {
	tmp := filepath.Join(st.Dir, "runs", tmpPrefix+id)
	if err := os.RemoveAll(tmp); err != nil {
		return nil, fmt.Errorf("clear %s: %w", tmp, err)
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	if err := tempdir.Claim(tmp); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return &RunWriter{st: st, id: id, Dir: tmp}, nil
}

// WriteJSON writes one JSON file into the run.
func (w *RunWriter) WriteJSON(name string, v any) error {
	return writeJSON(filepath.Join(w.Dir, name), v)
}

// Commit fsyncs every file of the run and renames its directory into place,
// so a run directory is either complete or absent. The owner record goes
// first: a committed run has no writer.
func (w *RunWriter) Commit() error {
	if err := os.Remove(filepath.Join(w.Dir, tempdir.OwnerFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("commit run %s: %w", w.id, err)
	}
	entries, err := os.ReadDir(w.Dir)
	if err != nil {
		return fmt.Errorf("commit run %s: %w", w.id, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		if err := syncFile(filepath.Join(w.Dir, e.Name())); err != nil {
			return fmt.Errorf("commit run %s: %w", w.id, err)
		}
	}
	if err := syncDir(w.Dir); err != nil {
		return fmt.Errorf("commit run %s: %w", w.id, err)
	}
	final := w.st.RunDir(w.id)
	if err := os.RemoveAll(final); err != nil {
		return fmt.Errorf("commit run %s: %w", w.id, err)
	}
	if err := os.Rename(w.Dir, final); err != nil {
		return fmt.Errorf("commit run %s: %w", w.id, err)
	}
	return syncDir(filepath.Join(w.st.Dir, "runs"))
}

// Abort discards the run's temporary directory.
func (w *RunWriter) Abort() { os.RemoveAll(w.Dir) }

func writeJSON(path string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeJSONAtomic replaces path in one step, for files outside a run.
func writeJSONAtomic(path string, v any) error {
	tmp := path + ".tmp"
	if err := writeJSON(tmp, v); err != nil {
		return err
	}
	return replaceWith(path, tmp)
}

// writeAtomic replaces path in one step with what write writes.
func writeAtomic(path string, write func(io.Writer) error) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	err = write(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write %s: %w", path, cerr)
	}
	if err != nil {
		return err
	}
	return replaceWith(path, tmp)
}

// replaceWith syncs tmp and renames it to path.
func replaceWith(path, tmp string) error {
	if err := syncFile(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}

func syncDir(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}

// hostBinary is experiment.json's host_binary for this svclab.
func hostBinary() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	path, args := hostentry.Command(exe)
	return strings.Join(append([]string{path}, args...), " ")
}
