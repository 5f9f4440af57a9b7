package synth

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/svclab/svclab/svc"
)

// Distribution names, as written in a spec: "exp(2ms)", "lognormal(2ms,
// 0.5)", "uniform(1ms, 3ms)". A value without one is a constant.
const (
	distExp       = "exp"
	distLognormal = "lognormal"
	distUniform   = "uniform"
)

// distNames lists the distributions for error messages.
var distNames = []string{distExp + "(mean)", distLognormal + "(mean, sigma)", distUniform + "(min, max)"}

// quantity says how a distribution's value parameters are written and
// read: a duration ("2ms"), a size ("8KiB") or a plain number ("0.5").
type quantity int

const (
	qDuration quantity = iota
	qSize
	qNumber
)

// parse reads one value parameter in the quantity's unit, as a float in
// its base unit (nanoseconds, bytes, or itself).
func (q quantity) parse(s string) (float64, error) {
	switch q {
	case qDuration:
		var d svc.Duration
		if err := d.UnmarshalText([]byte(s)); err != nil {
			return 0, err
		}
		return float64(d), nil
	case qSize:
		var b svc.ByteSize
		if strings.HasPrefix(strings.TrimSpace(s), "-") {
			return 0, fmt.Errorf("must not be negative, got %q", s)
		}
		if err := b.UnmarshalText([]byte(s)); err != nil {
			return 0, err
		}
		return float64(b), nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("not a number: %q", s)
	}
	if f < 0 {
		return 0, fmt.Errorf("must not be negative, got %q", s)
	}
	return f, nil
}

// format writes a base-unit value back in the quantity's unit, so that a
// distribution's text reads back to the same one.
func (q quantity) format(v float64) string {
	switch q {
	case qDuration:
		return time.Duration(math.Round(v)).String()
	case qSize:
		return svc.ByteSize(math.Round(v)).String()
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// dist is a value of a spec that may vary: a constant, or a distribution
// whose samples are drawn from a seeded source. Its parameters are held in
// the quantity's base unit.
type dist struct {
	kind string  // "" for a constant, or one of the dist* names
	a, b float64 // the constant; exp's mean; lognormal's mean and sigma; uniform's bounds
}

// parseDist reads a constant or a distribution of quantity q.
func parseDist(text string, q quantity) (dist, error) {
	s := strings.TrimSpace(text)
	open := strings.IndexByte(s, '(')
	if open < 0 {
		v, err := q.parse(s)
		if err != nil {
			return dist{}, err
		}
		return dist{a: v}, nil
	}
	name := strings.TrimSpace(s[:open])
	if !strings.HasSuffix(s, ")") {
		return dist{}, fmt.Errorf("%q: a distribution is name(arguments), one of %s", text, strings.Join(distNames, ", "))
	}
	args := strings.Split(s[open+1:len(s)-1], ",")
	want := map[string]int{distExp: 1, distLognormal: 2, distUniform: 2}[name]
	if want == 0 {
		return dist{}, fmt.Errorf("%q: unknown distribution %q (known: %s)", text, name, strings.Join(distNames, ", "))
	}
	if len(args) != want {
		// An app uses only the public API, so not internal/english.
		noun := "arguments"
		if want == 1 {
			noun = "argument"
		}
		return dist{}, fmt.Errorf("%q: %s takes %d %s, got %d (known: %s)", text, name, want, noun, len(args), strings.Join(distNames, ", "))
	}
	d := dist{kind: name}
	var err error
	if d.a, err = q.parse(args[0]); err != nil {
		return dist{}, fmt.Errorf("%q: %w", text, err)
	}
	switch name {
	case distLognormal:
		// sigma is the spread of the logarithm, a plain number.
		if d.b, err = qNumber.parse(args[1]); err != nil {
			return dist{}, fmt.Errorf("%q: sigma: %w", text, err)
		}
		if d.a == 0 {
			return dist{}, fmt.Errorf("%q: the mean must be above zero", text)
		}
	case distUniform:
		if d.b, err = q.parse(args[1]); err != nil {
			return dist{}, fmt.Errorf("%q: %w", text, err)
		}
		if d.b < d.a {
			return dist{}, fmt.Errorf("%q: max is below min", text)
		}
	}
	return d, nil
}

// text writes d as a spec would, in quantity q.
func (d dist) text(q quantity) string {
	switch d.kind {
	case "":
		return q.format(d.a)
	case distExp:
		return fmt.Sprintf("%s(%s)", d.kind, q.format(d.a))
	case distLognormal:
		return fmt.Sprintf("%s(%s, %s)", d.kind, q.format(d.a), qNumber.format(d.b))
	}
	return fmt.Sprintf("%s(%s, %s)", d.kind, q.format(d.a), q.format(d.b))
}

// mean is the distribution's expected value.
func (d dist) mean() float64 {
	if d.kind == distUniform {
		return (d.a + d.b) / 2
	}
	// A constant is its own mean, and exp and lognormal are given by it.
	return d.a
}

// max is the largest value d can take, +Inf for an unbounded one.
func (d dist) max() float64 {
	switch d.kind {
	case "":
		return d.a
	case distUniform:
		return d.b
	}
	return math.Inf(1)
}

// zero reports whether d is the constant 0.
func (d dist) zero() bool { return d.kind == "" && d.a == 0 }

// sample draws a value from d with src (gonum's distuv samplers), never
// below zero. A constant draws nothing from src.
func (d dist) sample(src rand.Source) float64 {
	switch d.kind {
	case distExp:
		return distuv.Exponential{Rate: 1 / d.a, Src: src}.Rand()
	case distLognormal:
		// Given by its mean: mu = ln(mean) - sigma²/2.
		return distuv.LogNormal{Mu: math.Log(d.a) - d.b*d.b/2, Sigma: d.b, Src: src}.Rand()
	case distUniform:
		if d.a == d.b {
			return d.a
		}
		return distuv.Uniform{Min: d.a, Max: d.b, Src: src}.Rand()
	}
	return d.a
}

// Duration is a time a spec gives a service's work: "2ms", or a
// distribution of it, "exp(2ms)".
type Duration struct{ dist }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) (err error) {
	d.dist, err = parseDist(string(b), qDuration)
	return err
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

func (d Duration) String() string { return d.text(qDuration) }

// Sample draws one duration.
func (d Duration) Sample(src rand.Source) time.Duration {
	return time.Duration(d.sample(src))
}

// Size is a number of bytes: "8KiB", or a distribution of it,
// "lognormal(8KiB, 1)".
type Size struct{ dist }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Size) UnmarshalText(b []byte) (err error) {
	s.dist, err = parseDist(string(b), qSize)
	return err
}

// MarshalText implements encoding.TextMarshaler.
func (s Size) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s Size) String() string { return s.text(qSize) }

// Sample draws one size, in whole bytes.
func (s Size) Sample(src rand.Source) int {
	return int(math.Round(s.sample(src)))
}

// Number is a plain number or a distribution of it, "uniform(1, 3)", as
// [app.graph] gives each edge's count and probability.
type Number struct{ dist }

// UnmarshalText implements encoding.TextUnmarshaler.
func (n *Number) UnmarshalText(b []byte) (err error) {
	n.dist, err = parseDist(string(b), qNumber)
	return err
}

// MarshalText implements encoding.TextMarshaler.
func (n Number) MarshalText() ([]byte, error) { return []byte(n.String()), nil }

func (n Number) String() string { return n.text(qNumber) }
