package netns

import (
	"reflect"
	"testing"
)

func TestAssignCPUs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pool   []int
		counts []int
		want   [][]int
	}{
		{"one core each on two", []int{1, 0}, []int{1, 1}, [][]int{{1}, {0}}},
		{"a machine without cpus gets none", []int{1, 0}, []int{0, 1}, [][]int{nil, {1}}},
		{"disjoint runs in the machines' order", []int{1, 2, 3, 0}, []int{2, 1, 1}, [][]int{{1, 2}, {3}, {0}}},
		{"past the pool, machines share", []int{1, 0}, []int{2, 1}, [][]int{{0, 1}, {1}}},
		{"a machine's cores come sorted", []int{3, 0, 1}, []int{2, 1}, [][]int{{0, 3}, {1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := assignCPUs(tc.pool, tc.counts); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("assignCPUs(%v, %v) = %v, want %v", tc.pool, tc.counts, got, tc.want)
			}
		})
	}
}
