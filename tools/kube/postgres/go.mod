// The entrypoint of the real node's stand-in PostgreSQL image (make
// cluster, the real-node tests): built here because no registry is
// reachable to pull the official postgres image.
module github.com/svclab/svclab/tools/kube/postgres

go 1.26
