package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/svclab/svclab/internal/spec"
)

// A sequential experiment (experiment.until = "decided") runs its design in
// blocks, every design point once per block in a fresh random order, with
// run.json's repetition as the block's number. After each block the
// analysis says whether every question of the spec is decided (Options.Decide);
// the experiment stops then, or when the next block would not fit in the
// budget (experiment.max_runs, experiment.budget), and experiment.json
// records which. The analysis's intervals are confidence sequences, valid
// however the experiment decided to stop (docs/ANALYSIS.md, "Stopping when
// decided"); the runner only asks.

// Decision is the analysis's answer after a block.
type Decision struct {
	// Decided says every question is decided.
	Decided bool
	// Lines say each question's state, for the log.
	Lines []string
}

// DecideFunc asks the analysis whether the questions of the experiment in
// dir are decided by its committed runs.
type DecideFunc func(ctx context.Context, dir string) (Decision, error)

// Stop reasons of a sequential experiment.
const (
	StopDecided = "decided"
	StopBudget  = "budget"
)

// Stopped is experiment.json's "stopped": why a sequential experiment
// ended, after how many complete blocks and runs.
type Stopped struct {
	Reason string `json:"reason"`
	Blocks int    `json:"blocks"`
	Runs   int    `json:"runs"`
}

// SequentialInfo is experiment.json's "sequential": the budget of an
// until = "decided" experiment and how much of it was spent.
type SequentialInfo struct {
	MaxRuns int     `json:"max_runs"`
	BudgetS float64 `json:"budget_s,omitempty"`
	// ElapsedS is the time spent in blocks so far, over every resume.
	ElapsedS float64 `json:"elapsed_s"`
	// Blocks counts the blocks started; experiment.json's runs lists
	// theirs.
	Blocks int `json:"blocks"`
}

// Sequential says whether the plan runs until its questions are decided.
func (p *Plan) Sequential() bool { return p.Spec.Experiment.Until == spec.UntilDecided }

// BlockSize is the runs of one block: every design point once.
func (p *Plan) BlockSize() int { return len(p.Design.Points) }

// maxBlocks is the most blocks a sequential plan holds: those
// experiment.max_runs allows, and no more than the plan's estimate fits
// in experiment.budget (rounded up; the runner stops on the time spent).
func (p *Plan) maxBlocks() int {
	e := p.Spec.Experiment
	n := max(1, e.MaxRuns/max(1, p.BlockSize()))
	if e.Budget > 0 {
		if block := p.blockEstimate(); block > 0 {
			n = min(n, max(1, int((e.Budget.D()+block-1)/block)))
		}
	}
	return n
}

// decideConfidence is the confidence svclab-analysis decide answers at
// (its --confidence default; the runner gives none), shared among the
// ratios of a question (svclab_analysis.questions.answer).
const decideConfidence = 0.95

// mixtureC2 is the c² of the analysis's confidence sequence
// (svclab_analysis.sequential.MIXTURE_C2).
const mixtureC2 = 0.5

// blocksNeeded is the fewest blocks whose confidence sequence at
// confidence gives a finite interval: the first n at which the
// sequence's A = (n+c²)(1 − K^(−2/n)), K = √((n+c²)/c²)/α, is below n
// (docs/ANALYSIS.md, "Stopping when decided"). The analysis owns the
// rule (svclab_analysis.questions.blocks_needed): testdata/
// blocks_needed.json holds the numbers both are tested against. A falls
// towards 2·ln K as n grows, so the loop ends for every confidence below 1.
func blocksNeeded(confidence float64) int {
	alpha := 1 - confidence
	for n := 2; ; n++ {
		nf := float64(n)
		k := math.Sqrt((nf+mixtureC2)/mixtureC2) / alpha
		if (nf+mixtureC2)*(1-math.Pow(k, -2/nf)) < nf {
			return n
		}
	}
}

// blocksNeed is what the questions of a sequential plan need of its
// budget: the fewest blocks before every question can be decided, and
// the question that needs them (the first of those that need the most)
// with its count of ratios.
type blocksNeed struct {
	blocks, ratios int
	question       *spec.Question
}

// blocksNeeded says what the plan's questions need (blocksNeed): the
// analysis shares decide's confidence among a question's ratios, one for
// each level of its effect after the first in each cell of its by
// factors, and a ratio's confidence sequence has no finite interval
// before it has a value from blocksNeeded blocks. Zero for a plan
// without questions.
func (p *Plan) blocksNeeded() blocksNeed {
	levels := map[string]int{}
	for _, f := range p.Design.Factors {
		levels[f.Name] = len(f.Levels)
	}
	var need blocksNeed
	for i, q := range p.Spec.Experiment.Questions {
		ratios := max(1, levels[q.Effect]-1)
		for _, b := range q.By {
			ratios *= max(1, levels[b])
		}
		if n := blocksNeeded(ratioConfidence(ratios)); n > need.blocks {
			need = blocksNeed{blocks: n, ratios: ratios, question: &p.Spec.Experiment.Questions[i]}
		}
	}
	return need
}

// ratioConfidence is the confidence of each of a question's ratios.
func ratioConfidence(ratios int) float64 {
	return 1 - (1-decideConfidence)/float64(ratios)
}

// FewBlocks says, of a sequential plan whose budget holds fewer blocks
// than its questions need (blocksNeeded), that they cannot be decided
// within it and how far to raise it; empty otherwise. The budget holds
// the blocks experiment.max_runs allows and those experiment.budget fits
// at the plan's estimate of a block, whole: the runner does not start a
// block that would overrun it.
func (p *Plan) FewBlocks() string {
	if !p.Sequential() {
		return ""
	}
	need := p.blocksNeeded()
	e := p.Spec.Experiment
	size := p.BlockSize()
	byRuns := e.MaxRuns / max(1, size)
	allowed := byRuns
	var limits, raise []string
	if byRuns < need.blocks {
		limits = append(limits, fmt.Sprintf("experiment.max_runs = %d holds %d blocks of %d runs", e.MaxRuns, byRuns, size))
		raise = append(raise, fmt.Sprintf("experiment.max_runs to %d", need.blocks*size))
	}
	if block := p.blockEstimate(); e.Budget > 0 && block > 0 {
		byTime := int(e.Budget.D() / block)
		allowed = min(allowed, byTime)
		if byTime < need.blocks {
			limits = append(limits, fmt.Sprintf("experiment.budget = %s fits %d at the estimated %s a block", e.Budget, byTime, block.Round(time.Second)))
			enough := addSat(mulSat(block, need.blocks), time.Second-1).Truncate(time.Second)
			raise = append(raise, fmt.Sprintf("experiment.budget to %s", enough))
		}
	}
	if allowed >= need.blocks {
		return ""
	}
	each := fmt.Sprintf("its ratio at %.4g%%", 100*ratioConfidence(1))
	if need.ratios > 1 {
		each = fmt.Sprintf("its %d ratios at %.4g%% each", need.ratios, 100*ratioConfidence(need.ratios))
	}
	return fmt.Sprintf("question %q cannot be decided within the budget: its confidence sequences need %d usable blocks for a finite interval (%s), but %s; raise %s (docs/ANALYSIS.md, \"Stopping when decided\")",
		need.question.Name, need.blocks, each, strings.Join(limits, ", and "), strings.Join(raise, " and "))
}

// sequential drives the blocks of a sequential experiment from execute's
// loop; a nil *sequential (a fixed design) does nothing.
type sequential struct {
	st     *Store
	p      *Plan
	decide DecideFunc
	log    io.Writer
	info   SequentialInfo
	start  time.Time
	// spent is the time of earlier invocations (a resume).
	spent time.Duration
	// ran says a run of the current block ran in this invocation, so
	// that the analysis is asked after it.
	ran     bool
	stopped *Stopped
}

// newSequential is the driver of p's blocks, nil for a fixed design. A
// sequential design needs the analysis to decide.
func newSequential(st *Store, p *Plan, decide DecideFunc, log io.Writer) (*sequential, error) {
	if !p.Sequential() {
		return nil, nil
	}
	if decide == nil {
		return nil, errors.New("experiment.until = \"decided\" needs the analysis to decide after each block (svclab-analysis decide), and none was given")
	}
	ef, err := readExperimentFile(st.Dir)
	if err != nil {
		return nil, err
	}
	sq := &sequential{st: st, p: p, decide: decide, log: log, start: time.Now(), stopped: ef.Stopped}
	if ef.Sequential != nil {
		sq.info = *ef.Sequential
		sq.spent = time.Duration(ef.Sequential.ElapsedS * float64(time.Second))
	}
	sq.info.MaxRuns = p.Spec.Experiment.MaxRuns
	sq.info.BudgetS = p.Spec.Experiment.Budget.D().Seconds()
	if st := sq.stopped; st != nil {
		fmt.Fprintf(log, "%s stopped before, after %d blocks (%d runs): %s\n", sq.st.Dir, st.Blocks, st.Runs, st.Reason)
		switch {
		case st.Reason != StopBudget:
		case st.Blocks < sq.p.Repetitions && !sq.over(st.Blocks):
			// The budget was raised: the experiment goes on from the
			// block after the last, as if it had not stopped.
			fmt.Fprintf(log, "the budget now allows more (%s): continuing after block %d\n", sq.budgetText(), st.Blocks)
			sq.stopped = nil
		default:
			fmt.Fprintf(log, "the budget allows no more blocks (%s): raise experiment.max_runs or experiment.budget to continue\n", sq.budgetText())
		}
	}
	return sq, nil
}

// before is called before run i of the plan, committed or not. At the
// first run of a block not begun before (or one this invocation ran the
// block before of) it asks the analysis about the block before and checks
// the budget; it returns true when the experiment stops there.
func (sq *sequential) before(ctx context.Context, i int) (bool, error) {
	if sq == nil {
		return false, nil
	}
	if sq.stopped != nil {
		return true, nil
	}
	if i%sq.p.BlockSize() != 0 {
		return false, nil
	}
	block := i / sq.p.BlockSize() // complete blocks before this one
	if block+1 <= sq.info.Blocks && !sq.ran {
		return false, nil // a block a resume skips through
	}
	if stop, err := sq.ask(ctx, block); stop || err != nil {
		return true, err
	}
	// The runs of the block about to start join experiment.json's plan,
	// so that it lists the blocks begun, which the analysis counts.
	sq.info.Blocks = max(sq.info.Blocks, block+1)
	return false, sq.record(nil)
}

// ask asks the analysis about the complete blocks so far, and stops the
// experiment when they decide or another block would not fit the budget.
func (sq *sequential) ask(ctx context.Context, block int) (bool, error) {
	sq.ran = false
	if block == 0 {
		return false, nil
	}
	d, err := sq.decide(ctx, sq.st.Dir)
	if err != nil {
		if ctx.Err() != nil {
			return true, fmt.Errorf("%w after block %d; continue with: svclab run --resume %s %s", ErrInterrupted, block, sq.st.Dir, sq.p.Spec.Path)
		}
		return true, fmt.Errorf("ask the analysis after block %d: %w (the runs are kept; continue with: svclab run --resume %s %s)", block, err, sq.st.Dir, sq.p.Spec.Path)
	}
	state := "undecided"
	if d.Decided {
		state = "decided"
	}
	fmt.Fprintf(sq.log, "block %d of at most %d: %s\n", block, sq.p.Repetitions, state)
	for _, l := range d.Lines {
		fmt.Fprintf(sq.log, "  %s\n", l)
	}
	switch {
	case d.Decided:
		return true, sq.stop(StopDecided, block)
	case block >= sq.p.Repetitions || sq.over(block):
		return true, sq.stop(StopBudget, block)
	}
	return false, nil
}

// over says whether another block would exceed experiment.budget, at the
// mean time of a block so far.
func (sq *sequential) over(blocks int) bool {
	budget := sq.p.Spec.Experiment.Budget.D()
	if budget <= 0 || blocks <= 0 {
		return false
	}
	elapsed := sq.elapsed()
	return elapsed+elapsed/time.Duration(blocks) > budget
}

func (sq *sequential) elapsed() time.Duration { return sq.spent + time.Since(sq.start) }

// ranOne notes that a run of the current block ran in this invocation.
func (sq *sequential) ranOne() {
	if sq != nil {
		sq.ran = true
	}
}

// end is called when the plan's runs are done: the analysis is asked
// about the last block, and the budget is spent unless that decides.
func (sq *sequential) end(ctx context.Context) error {
	if sq == nil || sq.stopped != nil {
		return nil
	}
	_, err := sq.ask(ctx, sq.p.Repetitions)
	return err
}

// stop records why the experiment stopped.
func (sq *sequential) stop(reason string, blocks int) error {
	sq.stopped = &Stopped{Reason: reason, Blocks: blocks, Runs: blocks * sq.p.BlockSize()}
	what := "every question is decided"
	if reason == StopBudget {
		what = fmt.Sprintf("the budget is spent (%s)", sq.budgetText())
	}
	fmt.Fprintf(sq.log, "stopped after %d blocks (%d runs): %s\n", blocks, sq.stopped.Runs, what)
	return sq.record(sq.stopped)
}

func (sq *sequential) budgetText() string {
	e := sq.p.Spec.Experiment
	parts := []string{fmt.Sprintf("max_runs %d", e.MaxRuns)}
	if e.Budget > 0 {
		parts = append(parts, fmt.Sprintf("budget %s, %s spent", e.Budget, sq.elapsed().Round(time.Second)))
	}
	return strings.Join(parts, ", ")
}

// record rewrites experiment.json with the blocks begun, the time spent
// and, once stopped, why.
func (sq *sequential) record(stopped *Stopped) error {
	ef, err := readExperimentFile(sq.st.Dir)
	if err != nil {
		return err
	}
	sq.info.ElapsedS = sq.elapsed().Seconds()
	info := sq.info
	ef.Sequential = &info
	ef.Stopped = stopped
	ef.Runs = plannedRuns(sq.p, sq.info.Blocks*sq.p.BlockSize())
	ef.Design.Repetitions = sq.info.Blocks
	return writeJSONAtomic(filepath.Join(sq.st.Dir, "experiment.json"), ef)
}

// outcome gives out how the experiment stopped and the runs of the blocks
// begun, rather than of every block the budget allowed.
func (sq *sequential) outcome(out *Outcome) {
	if sq == nil {
		return
	}
	out.Stopped = sq.stopped
	out.Runs = sq.info.Blocks * sq.p.BlockSize()
}

// budgetKeys are the keys a resume of a sequential experiment may change:
// they say how long it may go on, not what it measures.
var budgetKeys = []string{"max_runs", "budget"}

// budgetOnly says whether s differs from the spec the sequential
// experiment ef records (overrides applied) in its budget keys alone.
func budgetOnly(ef *ExperimentFile, s *spec.Spec) bool {
	if ef.Sequential == nil || ef.Spec == nil || s.Experiment.Until != spec.UntilDecided {
		return false
	}
	was, _, err := withoutBudget(ef.Spec)
	if err != nil {
		return false
	}
	now, _, err := withoutBudget(s.Tree())
	return err == nil && sameJSON(was, now)
}

// withoutBudget is tree as JSON reads it back, without the budget keys,
// and the budget keys' values.
func withoutBudget(tree map[string]any) (rest map[string]any, budget map[string]any, err error) {
	b, err := json.Marshal(tree)
	if err != nil {
		return nil, nil, err
	}
	if err := json.Unmarshal(b, &rest); err != nil {
		return nil, nil, err
	}
	budget = map[string]any{}
	if e, ok := rest["experiment"].(map[string]any); ok {
		for _, k := range budgetKeys {
			if v, ok := e[k]; ok {
				budget[k] = v
			}
			delete(e, k)
		}
	}
	return rest, budget, nil
}

// newBudget records in experiment.json a resumed sequential experiment's
// spec when only its budget changed, saying so: later resumes compare
// against it, and the analysis reads it.
func newBudget(st *Store, ef *ExperimentFile, p *Plan, log io.Writer) error {
	if SpecHash(p.Spec) == ef.SpecSHA256 {
		return nil
	}
	_, was, err := withoutBudget(ef.Spec)
	if err != nil {
		return err
	}
	_, now, err := withoutBudget(p.Spec.Tree())
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "the budget changed since %s started (%s): it goes on under the new one\n", st.Dir, budgetChange(was, now))
	ef.SpecText, ef.SpecSHA256, ef.Spec = string(p.Spec.Source), SpecHash(p.Spec), p.Spec.Tree()
	ef.Overrides = append([]string{}, p.Spec.Overrides...)
	return writeJSONAtomic(filepath.Join(st.Dir, "experiment.json"), ef)
}

// sameJSON says whether a and b encode alike (maps in key order).
func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// budgetChange says how each budget key changed: "max_runs 40 → 80".
func budgetChange(was, now map[string]any) string {
	var parts []string
	for _, k := range budgetKeys {
		a, b := was[k], now[k]
		if sameJSON(a, b) {
			continue
		}
		show := func(v any) string {
			if v == nil {
				return "none"
			}
			return fmt.Sprint(v)
		}
		parts = append(parts, fmt.Sprintf("%s %s → %s", k, show(a), show(b)))
	}
	return strings.Join(parts, ", ")
}

// readExperimentFile reads dir's experiment.json.
func readExperimentFile(dir string) (*ExperimentFile, error) {
	b, err := os.ReadFile(filepath.Join(dir, "experiment.json"))
	if err != nil {
		return nil, fmt.Errorf("%s is not a results directory (no experiment.json): %w", dir, err)
	}
	var ef ExperimentFile
	if err := json.Unmarshal(b, &ef); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, "experiment.json"), err)
	}
	return &ef, nil
}
