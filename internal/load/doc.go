// Package load is svclab's load generator: open-loop arrivals free of
// coordinated omission, closed-loop virtual users, and user flows, against
// HTTP/1.1, h2c and gRPC targets or any grpc.ClientConnInterface.
//
// Every request is timed twice. Latency runs from the intended send time,
// so a stalled target is charged for the requests that waited behind it;
// service time runs from the moment the request was written. Both go into
// one HdrHistogram per operation (1 µs to 60 s, 3 significant digits) and a
// per-second series, so memory stays flat however long a run lasts. Raw
// per-request samples are optional and streamed to Parquet.
//
// The generator audits itself: how late it sent, its own CPU and GC pauses,
// and whether it, not the target, was the bottleneck.
//
// A run is configured by Config (the [load] table of a spec), driven against
// a Target (built from the Config by NewTarget, or by the caller from a
// grpc.ClientConnInterface or any function), and returns a Result that
// writes the files docs/RESULTS.md describes.
package load
