// Package registry keeps implementations by name, registered from init
// functions and chosen by a spec: apps, transports, deployers.
package registry

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Registry maps names to values of T. Its methods are safe for concurrent
// use.
type Registry[T any] struct {
	kind string
	mu   sync.RWMutex
	m    map[string]T
}

// New returns an empty registry of one kind of thing ("deployer"), which
// its messages name.
func New[T any](kind string) *Registry[T] {
	return &Registry[T]{kind: kind, m: map[string]T{}}
}

// Register makes v available as name. It panics on a duplicate name, as
// that is a programming error.
func (r *Registry[T]) Register(name string, v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		panic(fmt.Sprintf("registry: %s %q registered twice", r.kind, name))
	}
	r.m[name] = v
}

// Lookup returns the value registered as name, or an error that lists the
// known names.
func (r *Registry[T]) Lookup(name string) (T, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := r.m[name]
	if !ok {
		return v, fmt.Errorf("unknown %s %q (known: %s)", r.kind, name, r.knownLocked())
	}
	return v, nil
}

// Names lists the registered names, sorted.
func (r *Registry[T]) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.namesLocked()
}

func (r *Registry[T]) namesLocked() []string {
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (r *Registry[T]) knownLocked() string {
	if len(r.m) == 0 {
		return "none"
	}
	return strings.Join(r.namesLocked(), ", ")
}
