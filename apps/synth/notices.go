package synth

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	synthpb "github.com/svclab/svclab/proto/synth"
)

// Notices names the services no request reaches (runtime.Noter): they
// start and serve nothing, which is seldom what their author meant (a
// call left out, a probability of 0, a path that skips them), and a
// run would measure them only as idle processes.
func (c *Config) Notices() []string {
	reached := map[string]bool{c.EntryName: true}
	key := "app.services"
	what := fmt.Sprintf("no call from the entry %s reaches", c.EntryName)
	if len(c.plans) > 0 {
		key, what = "app.paths", "no path calls"
		var walk func(*synthpb.Plan)
		walk = func(p *synthpb.Plan) {
			for _, st := range p.GetCalls() {
				reached[st.GetTo()] = true
				walk(st.GetPlan())
			}
		}
		for _, p := range c.plans {
			walk(p)
		}
	} else {
		for queue := []string{c.EntryName}; len(queue) > 0; queue = queue[1:] {
			s := c.services[queue[0]]
			if s == nil {
				continue
			}
			for _, call := range s.Calls {
				if !reached[call.To] && call.count()*call.probability() > 0 {
					reached[call.To] = true
					queue = append(queue, call.To)
				}
			}
		}
	}
	var idle []string
	for _, name := range slices.Sorted(maps.Keys(c.services)) {
		if !reached[name] {
			idle = append(idle, name)
		}
	}
	if len(idle) == 0 {
		return nil
	}
	const shown = 8
	names := strings.Join(idle[:min(len(idle), shown)], ", ")
	if len(idle) > shown {
		names += fmt.Sprintf(" and %d more", len(idle)-shown)
	}
	they := "they start and serve nothing"
	if len(idle) == 1 {
		they = "it starts and serves nothing"
	}
	return []string{fmt.Sprintf("%s: %s %s: %s", key, what, names, they)}
}
