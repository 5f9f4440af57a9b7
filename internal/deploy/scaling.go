package deploy

import "time"

// ScaleEvent is one metric of one decision of an autoscaler: the rows of a
// run's scaling.parquet (docs/RESULTS.md).
type ScaleEvent struct {
	Time  time.Time
	Group string
	// Metric is "cpu" or "memory".
	Metric string
	// Utilization is the group's average, in percent of the request;
	// Target the percentage to keep.
	Utilization, Target int
	// Current is the replicas when deciding; Proposed what this metric
	// asked for; Desired what the autoscaler scaled to, after the other
	// metrics, the stabilization window, the rate limit and min/max.
	Current, Proposed, Desired int
	// Reason says what held Desired back, if anything.
	Reason string
	// Error is why the metric could not be read, if it could not.
	Error string
}

// Autoscaled is a Deployment whose groups an autoscaler resizes while it
// runs; the runner records its decisions with the run.
type Autoscaled interface {
	// ScaleEvents returns every decision so far, oldest first.
	ScaleEvents() []ScaleEvent
}
