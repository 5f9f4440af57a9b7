package experiment

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/svclab/svclab/internal/spec"
)

// Point is one design point: a level index for each factor, in factor order.
type Point []int

// Design is the set of design points an experiment runs, each repeated.
type Design struct {
	Kind    string // "full" or "fractional"
	Factors []spec.Factor
	Points  []Point
	// Defining is the defining relation of a fractional design, as words
	// such as "ABCD" (I = ABCD); empty for a full design.
	Defining []string
	// Aliases lists, for a fractional design, each main effect and
	// two-factor interaction with the effects it is confounded with.
	Aliases []string
	// Resolution is the length of the shortest defining word (0 if full).
	Resolution int
}

// NewDesign builds the design the spec asks for. Full designs cross every
// level of every factor, in standard (Yates) order: the first factor varies
// fastest. Fractional designs take two-level factors, the first level coded
// -1 and the second +1, and set each generated factor to the product of
// the signs of its generator word.
//
// The spec has already refused a design of more runs than
// experiment.max_runs, counted before anything is built; ctx still stops
// the expansion, as a cap may be set high.
func NewDesign(ctx context.Context, s *spec.Spec) (*Design, error) {
	e := s.Experiment
	d := &Design{Kind: e.Design, Factors: e.Factors}
	if e.Design != "fractional" {
		sizes := make([]int, len(e.Factors))
		for i, f := range e.Factors {
			sizes[i] = len(f.Levels)
		}
		var err error
		d.Points, err = crossProduct(ctx, sizes)
		return d, err
	}

	gen := map[string]string{}
	for _, g := range e.Generators {
		gen[g.Letter] = g.Word
	}
	for _, f := range e.Factors {
		if len(f.Levels) != 2 {
			return nil, s.Errorf(spec.FactorKey(f.Name), "a fractional design needs two levels per factor, got %d", len(f.Levels))
		}
	}
	for _, g := range e.Generators {
		for _, c := range g.Word {
			if _, generated := gen[string(c)]; generated {
				return nil, s.Errorf("experiment.generators."+g.Letter, "%c is itself generated; write generators in terms of base factors only", c)
			}
		}
	}
	var base []int // indexes of the factors not generated
	for i, f := range e.Factors {
		if _, ok := gen[f.Letter]; !ok {
			base = append(base, i)
		}
	}
	baseSizes := make([]int, len(base))
	for i := range baseSizes {
		baseSizes[i] = 2
	}
	letterIndex := map[rune]int{}
	for i, f := range e.Factors {
		letterIndex[rune(f.Letter[0])] = i
	}
	basePoints, err := crossProduct(ctx, baseSizes)
	if err != nil {
		return nil, err
	}
	for _, bp := range basePoints {
		p := make(Point, len(e.Factors))
		for j, fi := range base {
			p[fi] = bp[j]
		}
		for _, g := range e.Generators {
			sign := 1
			for _, c := range g.Word {
				if p[letterIndex[c]] == 0 {
					sign = -sign
				}
			}
			if sign > 0 {
				p[letterIndex[rune(g.Letter[0])]] = 1
			}
		}
		d.Points = append(d.Points, p)
	}
	var words []string
	for _, g := range e.Generators {
		words = append(words, g.Word+g.Letter)
	}
	if d.Defining, err = definingRelation(ctx, words); err != nil {
		return nil, err
	}
	d.Resolution = len(d.Defining[0])
	for _, w := range d.Defining {
		d.Resolution = min(d.Resolution, len(w))
	}
	var letters []string
	for _, f := range e.Factors {
		letters = append(letters, f.Letter)
	}
	if d.Aliases, err = aliasStructure(ctx, letters, d.Defining); err != nil {
		return nil, err
	}
	return d, nil
}

// checkEvery is how many steps a planning loop takes between looks at its
// context: often enough to stop within milliseconds, rarely enough to cost
// nothing.
const checkEvery = 1024

// stopped returns ctx's error, wrapped to say what it interrupted, every
// checkEvery-th step i.
func stopped(ctx context.Context, i int, what string) error {
	if i%checkEvery != 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("planning stopped while %s: %w", what, context.Cause(ctx))
	}
	return nil
}

// crossProduct enumerates every combination of level indexes, the first
// position varying fastest.
func crossProduct(ctx context.Context, sizes []int) ([]Point, error) {
	n := 1
	for _, s := range sizes {
		n *= s
	}
	out := make([]Point, 0, n)
	for i := 0; i < n; i++ {
		if err := stopped(ctx, i, "expanding the design"); err != nil {
			return nil, err
		}
		p := make(Point, len(sizes))
		rest := i
		for j, s := range sizes {
			p[j] = rest % s
			rest /= s
		}
		out = append(out, p)
	}
	return out, nil
}

// multiply is the product of two effects in a two-level design: letters
// that appear in both cancel, as A·A = I. Effects are words of the factor
// letters A to Z, and the product comes out sorted.
func multiply(a, b string) string {
	var odd [26]bool
	for _, w := range []string{a, b} {
		for i := 0; i < len(w); i++ {
			odd[w[i]-'A'] = !odd[w[i]-'A']
		}
	}
	out := make([]byte, 0, len(a)+len(b))
	for i, in := range odd {
		if in {
			out = append(out, byte('A'+i))
		}
	}
	return string(out)
}

// definingRelation closes the generator words under multiplication: with
// generators I = w1 and I = w2, I = w1·w2 too.
func definingRelation(ctx context.Context, words []string) ([]string, error) {
	group := map[string]bool{}
	for _, w := range words {
		w = multiply(w, "")
		next := map[string]bool{w: true}
		i := 0
		for g := range group {
			if err := stopped(ctx, i, "listing the defining relation"); err != nil {
				return nil, err
			}
			i++
			next[multiply(g, w)] = true
		}
		for g := range next {
			if g != "" {
				group[g] = true
			}
		}
	}
	out := make([]string, 0, len(group))
	for g := range group {
		out = append(out, g)
	}
	sortEffects(out)
	return out, nil
}

// aliasStructure lists each main effect and two-factor interaction with its
// aliases, one alias set per line, starting with the defining relation.
func aliasStructure(ctx context.Context, letters []string, defining []string) ([]string, error) {
	lines := []string{"I = " + strings.Join(defining, " = ")}
	var effects []string
	for i, a := range letters {
		effects = append(effects, a)
		for _, b := range letters[i+1:] {
			effects = append(effects, a+b)
		}
	}
	sortEffects(effects)
	done := map[string]bool{}
	for _, e := range effects {
		if done[e] {
			continue
		}
		set := []string{e}
		for i, w := range defining {
			if err := stopped(ctx, i, "listing aliases"); err != nil {
				return nil, err
			}
			set = append(set, multiply(e, w))
		}
		sortEffects(set)
		for _, x := range set {
			done[x] = true
		}
		lines = append(lines, strings.Join(set, " = "))
	}
	return lines, nil
}

// sortEffects orders effects by order (number of letters), then
// alphabetically, as tables of effects are printed.
func sortEffects(e []string) {
	sort.Slice(e, func(i, j int) bool {
		if len(e[i]) != len(e[j]) {
			return len(e[i]) < len(e[j])
		}
		return e[i] < e[j]
	})
}

// Describe renders a design point as "deploy.transport=grpc load.rate=100
// mesh={mtls=true, tracing=1}".
func (d *Design) Describe(p Point) string {
	parts := make([]string, len(p))
	for i, li := range p {
		f := d.Factors[i]
		level := f.FormatLevel(f.Levels[li])
		if f.Linked() {
			level = "{" + level + "}"
		}
		parts[i] = f.Name + "=" + level
	}
	return strings.Join(parts, " ")
}

// Levels maps each factor's name to its level at point p, as Spec.With
// takes them.
func (d *Design) Levels(p Point) map[string]any { return d.levels(p) }
