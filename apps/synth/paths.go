package synth

import (
	"fmt"
	"slices"
	"strings"

	synthpb "github.com/svclab/svclab/proto/synth"
)

// parsePath reads a call tree written as app.paths holds it: the entry's
// calls separated by spaces (or commas), each a service name followed,
// when it calls on, by its own calls in parentheses:
// "catalog(pricing reviews) cart(inventory inventory pricing)".
func parsePath(s string) (*synthpb.Plan, error) {
	p := &pathParser{s: s}
	plan, err := p.list()
	if err != nil {
		return nil, err
	}
	if p.skip(); p.i < len(p.s) {
		return nil, fmt.Errorf("unexpected %q at character %d", p.s[p.i], p.i+1)
	}
	return plan, nil
}

type pathParser struct {
	s string
	i int
}

func (p *pathParser) skip() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == ',' || p.s[p.i] == '\t' || p.s[p.i] == '\n') {
		p.i++
	}
}

func (p *pathParser) list() (*synthpb.Plan, error) {
	plan := &synthpb.Plan{}
	for {
		p.skip()
		if p.i == len(p.s) || p.s[p.i] == ')' {
			return plan, nil
		}
		start := p.i
		for p.i < len(p.s) && !strings.ContainsRune(" ,\t\n()", rune(p.s[p.i])) {
			p.i++
		}
		if p.i == start {
			return nil, fmt.Errorf("a service name is missing at character %d", p.i+1)
		}
		step := &synthpb.Step{To: p.s[start:p.i]}
		if p.i < len(p.s) && p.s[p.i] == '(' {
			p.i++
			sub, err := p.list()
			if err != nil {
				return nil, err
			}
			if p.i == len(p.s) {
				return nil, fmt.Errorf("the '(' after %s is not closed", step.To)
			}
			p.i++ // ')'
			step.Plan = sub
		}
		plan.Calls = append(plan.Calls, step)
	}
}

// formatPath writes a plan as parsePath reads it.
func formatPath(plan *synthpb.Plan) string {
	var b strings.Builder
	writePath(&b, plan)
	return b.String()
}

func writePath(b *strings.Builder, plan *synthpb.Plan) {
	for i, step := range plan.GetCalls() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(step.GetTo())
		if len(step.GetPlan().GetCalls()) > 0 {
			b.WriteByte('(')
			writePath(b, step.GetPlan())
			b.WriteByte(')')
		}
	}
}

// checkPath reports the first step of plan, made by caller, that is not
// one of the configured calls: a path follows the graph's edges, which
// are what a service has connections for. The steps under a call to an
// unknown service are not checked: that call's error says it is unknown.
func (c *Config) checkPath(caller string, plan *synthpb.Plan) error {
	for _, step := range plan.GetCalls() {
		callees := c.services[caller].callees()
		if !slices.Contains(callees, step.GetTo()) {
			return fmt.Errorf("%s does not call %s (its calls: %s)", caller, step.GetTo(), orNone(callees))
		}
		if _, known := c.services[step.GetTo()]; !known {
			continue
		}
		if err := c.checkPath(step.GetTo(), step.GetPlan()); err != nil {
			return err
		}
	}
	return nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
