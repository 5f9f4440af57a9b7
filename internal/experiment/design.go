package experiment

import (
	"fmt"
	"slices"
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
func NewDesign(s *spec.Spec) (*Design, error) {
	e := s.Experiment
	d := &Design{Kind: e.Design, Factors: e.Factors}
	if e.Design != "fractional" {
		sizes := make([]int, len(e.Factors))
		for i, f := range e.Factors {
			sizes[i] = len(f.Levels)
		}
		d.Points = crossProduct(sizes)
		return d, nil
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
	for _, bp := range crossProduct(baseSizes) {
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
	d.Defining = definingRelation(words)
	d.Resolution = len(d.Defining[0])
	for _, w := range d.Defining {
		d.Resolution = min(d.Resolution, len(w))
	}
	var letters []string
	for _, f := range e.Factors {
		letters = append(letters, f.Letter)
	}
	d.Aliases = aliasStructure(letters, d.Defining)
	return d, nil
}

// crossProduct enumerates every combination of level indexes, the first
// position varying fastest.
func crossProduct(sizes []int) []Point {
	n := 1
	for _, s := range sizes {
		n *= s
	}
	out := make([]Point, 0, n)
	for i := 0; i < n; i++ {
		p := make(Point, len(sizes))
		rest := i
		for j, s := range sizes {
			p[j] = rest % s
			rest /= s
		}
		out = append(out, p)
	}
	return out
}

// multiply is the product of two effects in a two-level design: letters
// that appear in both cancel, as A·A = I.
func multiply(a, b string) string {
	set := map[rune]bool{}
	for _, c := range a + b {
		set[c] = !set[c]
	}
	var out []rune
	for c, in := range set {
		if in {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return string(out)
}

// definingRelation closes the generator words under multiplication: with
// generators I = w1 and I = w2, I = w1·w2 too.
func definingRelation(words []string) []string {
	group := map[string]bool{}
	for _, w := range words {
		w = multiply(w, "")
		next := map[string]bool{w: true}
		for g := range group {
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
	return out
}

// aliasStructure lists each main effect and two-factor interaction with its
// aliases, one alias set per line, starting with the defining relation.
func aliasStructure(letters []string, defining []string) []string {
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
		for _, w := range defining {
			set = append(set, multiply(e, w))
		}
		sortEffects(set)
		for _, x := range set {
			done[x] = true
		}
		lines = append(lines, strings.Join(set, " = "))
	}
	return lines
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

// Describe renders a design point as "deploy.transport=grpc load.rate=100".
func (d *Design) Describe(p Point) string {
	parts := make([]string, len(p))
	for i, li := range p {
		parts[i] = fmt.Sprintf("%s=%v", d.Factors[i].Name, d.Factors[i].Levels[li])
	}
	return strings.Join(parts, " ")
}
