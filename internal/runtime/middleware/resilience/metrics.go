package resilience

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names.
const (
	RetriesName         = "svclab_client_retries_total"
	BudgetDeniedName    = "svclab_client_retry_budget_denied_total"
	BreakerRejectedName = "svclab_client_breaker_rejected_total"
	BreakerOpenedName   = "svclab_client_breaker_opened_total"
	BreakerStateName    = "svclab_client_breaker_state"
)

type metrics struct {
	retries, denied, rejected, opened *prometheus.CounterVec
	state                             *prometheus.GaugeVec
}

func newMetrics(group string) *metrics {
	cl := prometheus.Labels{"group": group}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: cl}, []string{"peer"})
	}
	return &metrics{
		retries:  counter(RetriesName, "Retries of calls to a peer."),
		denied:   counter(BudgetDeniedName, "Retries of calls to a peer that the retry budget refused."),
		rejected: counter(BreakerRejectedName, "Attempts to call a peer that its open circuit breaker failed fast."),
		opened:   counter(BreakerOpenedName, "Times a peer's circuit breaker opened."),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: BreakerStateName, Help: "A peer's circuit breaker: 0 closed, 1 half-open, 2 open.", ConstLabels: cl,
		}, []string{"peer"}),
	}
}

func (m *metrics) register(reg prometheus.Registerer) error {
	var errs []error
	for _, c := range []prometheus.Collector{m.retries, m.denied, m.rejected, m.opened, m.state} {
		errs = append(errs, reg.Register(c))
	}
	return errors.Join(errs...)
}
