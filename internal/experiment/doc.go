// Package experiment turns a spec into results: it expands the design
// (full factorial or 2^(k-p) fractional), orders the runs into a plan with a
// recorded seed, prepares every design point before the first run starts,
// and executes each run — deploy, warm up, measure under load while sampling
// every process's resources, tear down — committing it atomically to the
// result store. A killed experiment resumes from the store with --resume.
//
// The package knows no deployer: it drives one through the deploy package's
// interfaces, chosen by the spec's deploy.deployer.
package experiment
