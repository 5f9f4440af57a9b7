package experiment

// MetricsFile holds what the run's Prometheus scraped (deploy.metrics).
const MetricsFile = "metrics.parquet"

// MetricRow is one row of metrics.parquet: one sample of one series.
type MetricRow struct {
	// TS is seconds since the measurement started (negative in warm-up).
	TS    float64 `parquet:"t_s"`
	Name  string  `parquet:"name"`
	Group string  `parquet:"group"`
	// Component, Method, Code and Le are the series' labels, empty where
	// it has none: the RED metrics' component and method, an error's gRPC
	// code, a histogram bucket's upper bound.
	Component string  `parquet:"component"`
	Method    string  `parquet:"method"`
	Code      string  `parquet:"code"`
	Le        string  `parquet:"le"`
	Instance  string  `parquet:"instance"`
	Value     float64 `parquet:"value"`
	// Process is the replica scraped (`hop2#1`), as run.json names it.
	Process string `parquet:"process"`
}
