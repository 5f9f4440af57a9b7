// Package hostclock measures the floor a host puts under any paced sender:
// how late a thread that sleeps to a deadline wakes up. A bare
// sleep-to-deadline loop is the best an open-loop generator can do on the
// same core; its lateness is what the generator's own send lag is judged
// against, so that a virtual machine's timer jitter is not blamed on the
// generator, nor the generator's own stalls on the host.
//
// Sleeper is the precise wait both this calibration and the load
// generator use; Calibrate runs the bare loop and summarises the lateness
// with an HdrHistogram.
package hostclock
