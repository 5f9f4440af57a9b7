package live

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// latencyBuckets are the upper bounds (s) of the latency histogram
// /metrics exports, from the run's HdrHistogram: Prometheus's defaults
// with a finer bottom, where svclab's services answer.
var latencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

var (
	runLabel       = []string{"run"}
	descRequests   = prometheus.NewDesc("svclab_requests_total", "Requests completed in the current run's measurement so far.", runLabel, nil)
	descErrors     = prometheus.NewDesc("svclab_request_errors_total", "Requests that failed in the current run's measurement so far, by error class.", []string{"run", "class"}, nil)
	descThroughput = prometheus.NewDesc("svclab_throughput_requests_per_second", "Requests in the last second of the current run's measurement.", runLabel, nil)
	descLatency    = prometheus.NewDesc("svclab_request_latency_seconds", "Latency (from the intended send time) of the current run's requests so far, from the generators' merged HdrHistograms.", runLabel, nil)
	descLagP99     = prometheus.NewDesc("svclab_generator_send_lag_p99_seconds", "The load generator's send lag, 99th percentile over the measurement so far (the slowest generator's).", runLabel, nil)
	descLagMax     = prometheus.NewDesc("svclab_generator_send_lag_max_seconds", "The load generator's largest send lag over the measurement so far.", runLabel, nil)
	descCPU        = prometheus.NewDesc("svclab_process_cpu_cores", "A process's CPU use at the last sample, in cores (1 = one core busy).", []string{"run", "role", "process"}, nil)
	descMemory     = prometheus.NewDesc("svclab_process_memory_bytes", "A process's resident memory at the last sample.", []string{"run", "role", "process"}, nil)
	descReplicas   = prometheus.NewDesc("svclab_replicas", "A group's replicas after its last scaling.", []string{"run", "group"}, nil)
	descRunsDone   = prometheus.NewDesc("svclab_runs_finished_total", "Runs finished so far.", nil, nil)
	metricDescs    = []*prometheus.Desc{descRequests, descErrors, descThroughput, descLatency, descLagP99, descLagMax, descCPU, descMemory, descReplicas, descRunsDone}
)

// metricsHandler serves the board's series, in the OpenMetrics text
// format to a client that asks for it (Prometheus does) and in
// Prometheus's text format otherwise.
func metricsHandler(b *Board) http.Handler {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector{b})
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true, ErrorHandling: promhttp.HTTPErrorOnError})
}

// collector reads the board at each scrape.
type collector struct{ b *Board }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range metricDescs {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	b := c.b
	b.mu.Lock()
	defer b.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descRunsDone, prometheus.CounterValue, float64(b.results))
	r := b.cur
	if r == nil {
		return
	}
	id := r.run.ID
	ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(r.requests), id)
	for class, n := range r.classes {
		ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(n), id, class)
	}
	ch <- prometheus.MustNewConstMetric(descThroughput, prometheus.GaugeValue, r.rps, id)
	ch <- prometheus.MustNewConstMetric(descLagP99, prometheus.GaugeValue, r.lagP99.Seconds(), id)
	ch <- prometheus.MustNewConstMetric(descLagMax, prometheus.GaugeValue, r.lagMax.Seconds(), id)
	counts := make(map[float64]uint64, len(latencyBuckets))
	var cum uint64
	bars := r.latency.Distribution()
	i := 0
	for _, le := range latencyBuckets {
		// A bar is in the bucket when its highest value is (µs).
		for ; i < len(bars) && float64(bars[i].To) <= le*1e6; i++ {
			cum += uint64(bars[i].Count)
		}
		counts[le] = cum
	}
	n := uint64(r.latency.TotalCount())
	ch <- prometheus.MustNewConstHistogram(descLatency, n, r.latency.Mean()*float64(n)/1e6, counts, id)
	for _, p := range r.procs {
		ch <- prometheus.MustNewConstMetric(descCPU, prometheus.GaugeValue, p.CPU, id, p.Role, p.Name)
		ch <- prometheus.MustNewConstMetric(descMemory, prometheus.GaugeValue, float64(p.Memory), id, p.Role, p.Name)
	}
	for g, n := range r.replicas {
		ch <- prometheus.MustNewConstMetric(descReplicas, prometheus.GaugeValue, float64(n), id, g)
	}
}
