package spec

import (
	"fmt"
	"strings"
	"testing"
)

// TestFactorMistakeHidesNoQuestion checks that the generators and the
// questions are checked against the factors' names whatever is wrong with
// the factors' levels, or with their number.
func TestFactorMistakeHidesNoQuestion(t *testing.T) {
	var many strings.Builder
	for i := range 27 {
		fmt.Fprintf(&many, "\"load.k%d\" = [1, 2]\n", i)
	}
	for _, tc := range []struct {
		name, src string
		want      []string
	}{{
		name: "a factor's levels",
		src: `[experiment]
design = "fractional"
[experiment.factors]
"deploy.transport" = ["grpc"]
"load.rate" = [1, 2]
"load.duration" = ["1s", "2s"]
[experiment.generators]
C = "AZ"
[[experiment.questions]]
effect = "deploy.transport"
margin = 1.0
[[experiment.questions]]
effect = "nope"
by = ["load.rate", "load.rate"]
`,
		want: []string{
			`x.toml:4: experiment.factors."deploy.transport": a factor needs at least two levels, got 1`,
			`x.toml:8: experiment.generators.C: letter Z in "AZ" is not another factor`,
			`x.toml:11: experiment.questions[0].margin: a margin is a ratio above 0 other than 1, got 1`,
			`x.toml:13: experiment.questions[1].effect: "nope" is not a factor of this experiment; the factors are "deploy.transport", "load.rate", "load.duration"`,
			`x.toml:14: experiment.questions[1].by[1]: "load.rate" is listed twice`,
		},
	}, {
		name: "too many factors",
		src:  "[[experiment.questions]]\neffect = \"load.k3\"\nmargin = 0\n[[experiment.questions]]\neffect = \"load.k99\"\n[experiment.factors]\n" + many.String(),
		want: []string{
			`x.toml:3: experiment.questions[0].margin: a margin is a ratio above 0 other than 1, got 0`,
			`x.toml:5: experiment.questions[1].effect: "load.k99" is not a factor of this experiment`,
			`x.toml:6: experiment.factors: at most 26 factors, got 27`,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.toml", []byte(tc.src))
			if err == nil {
				t.Fatal("no error")
			}
			got := Unjoin(err)
			for _, w := range tc.want {
				found := false
				for _, e := range got {
					found = found || strings.HasPrefix(e.Error(), w)
				}
				if !found {
					t.Errorf("no error %q in\n%v", w, err)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("%d errors, want %d:\n%v", len(got), len(tc.want), err)
			}
		})
	}
}
