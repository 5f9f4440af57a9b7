// Package capacity finds the highest open-loop arrival rate a deployment
// sustains within its service-level objectives (SLOs), as Theodolite's
// capacity benchmarks and wrk2 users' hand sweeps do, with a bracketing
// search: the rate grows by a factor until a step breaks an SLO, then a
// binary search narrows the interval between the highest passing and the
// lowest failing rate, and confirmation runs repeat the answer.
//
// The package is pure: Search drives an injected StepFunc that runs one
// short constant-rate step and returns what it measured, so the search is
// tested against a synthetic service with a known knee, and the CLI hands
// it steps run against a real deployment. SLOs are the thresholds of
// [load.thresholds] (load.Thresholds), checked by their own Check; a Cutter
// tells a running step when its figures already decide that it fails, so
// that the step can be cut short.
package capacity
