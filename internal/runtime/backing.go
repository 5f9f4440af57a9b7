package runtime

import (
	"fmt"
	"os"
	"strings"
)

// Backing is a stateful service an app's components share, such as a
// database. It is not a component: the deployer runs it beside the app,
// with fixed resources, never replicated or placed, and hands its address
// to every host in the environment (BackingEnv).
type Backing struct {
	// Name tells the app's backing services apart, e.g. "db"; it names
	// the environment variable that carries the address.
	Name string
	// Kind is what runs: BackingPostgres or BackingRedis.
	Kind string
	// Setup is what the service holds at the start of every deployment:
	// for PostgreSQL, SQL that creates the schema and seeds it. The
	// deployer restores exactly this state before each run, so runs are
	// independent.
	Setup string
}

// BackingPostgres is the Kind of a PostgreSQL database; its address is a
// libpq connection string (keyword=value) that pgx accepts.
const BackingPostgres = "postgres"

// BackingRedis is the Kind of a Redis server; its address is a URL that
// go-redis's ParseURL accepts (unix:///path/redis.sock). Its Setup must be
// empty: every deployment starts with the server flushed.
const BackingRedis = "redis"

// BackingUser is a Config whose components need backing services. A
// deployer that cannot run one of them refuses the topology before
// anything starts.
type BackingUser interface {
	Backing() []Backing
}

// BackingsOf returns the backing services topo's app declares, none when
// its config declares none.
func BackingsOf(topo *Topology) []Backing {
	if u, ok := topo.Config.(BackingUser); ok {
		return u.Backing()
	}
	return nil
}

// BackingEnv is the environment variable that carries the address of the
// backing service named name to the hosts, e.g. SVCLAB_BACKING_DB.
func BackingEnv(name string) string {
	return "SVCLAB_BACKING_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(name))
}

// BackingAddr returns the address of the backing service name, for a
// component's constructor; it fails, naming the variable, when the
// deployer set none (a deployer that ignores the app's Backing).
func BackingAddr(name string) (string, error) {
	v := os.Getenv(BackingEnv(name))
	if v == "" {
		return "", fmt.Errorf("backing service %q: %s is not set: the deployer did not start it", name, BackingEnv(name))
	}
	return v, nil
}
