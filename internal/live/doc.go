// Package live is the live view of svclab's work (`--ui`): an HTTP server,
// on loopback unless asked otherwise, that serves a page which updates
// itself from server-sent events, and the run's series in the OpenMetrics
// text format at /metrics.
//
// What it shows comes in through a Board, whose methods the command calls
// as the work goes (the experiment's design, each run's phases and
// seconds, processes' resources, scaling, faults, results, capacity
// steps). The board keeps the experiment so far and the current run, so a
// page opened or reloaded in the middle is replayed it first; percentiles
// come from HdrHistograms merged exactly over every generator. Nothing a
// client sends changes anything: every endpoint is a GET.
package live
