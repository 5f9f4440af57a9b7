package load

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"

	"github.com/svclab/svclab/internal/pki"
)

// TLS is [load.tls]: a gRPC target over TLS, as ghz's --cacert, --cert and
// --key, such as the entry of a deployment with deploy.mtls, whose
// credentials `svclab up` prints.
type TLS struct {
	// CA is a PEM file of the certificates that may sign the server's;
	// empty means the system's roots.
	CA string `toml:"ca,omitempty" json:"ca,omitempty"`
	// Cert and Key are the client's certificate and key (PEM), for a
	// server that asks for one; both or neither.
	Cert string `toml:"cert,omitempty" json:"cert,omitempty"`
	Key  string `toml:"key,omitempty" json:"key,omitempty"`
	// ServerName is the name the server's certificate must carry; empty
	// means the target's host.
	ServerName string `toml:"server_name,omitempty" json:"server_name,omitempty"`
}

// check returns the key at fault and why, before anything is dialled.
func (t *TLS) check(p Protocol) (string, error) {
	if p != GRPC {
		return "ca", fmt.Errorf("TLS is for protocol \"grpc\" (the http and h2c clients are plaintext), got protocol %q", p)
	}
	if (t.Cert == "") != (t.Key == "") {
		if t.Cert == "" {
			return "cert", errors.New("a client key needs its certificate: give cert too")
		}
		return "key", errors.New("a client certificate needs its key: give key too")
	}
	_, key, err := t.config()
	return key, err
}

// config reads the files into a client's tls.Config; on error it names
// the key whose file is at fault.
func (t *TLS) config() (*tls.Config, string, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CA != "" {
		pool, err := pki.CertPool(t.CA)
		if err != nil {
			return nil, "ca", err
		}
		c.RootCAs = pool
	}
	if t.Cert != "" {
		if _, err := os.Stat(t.Key); err != nil {
			return nil, "key", err
		}
		pair, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, "cert", fmt.Errorf("client certificate %s and key %s: %w", t.Cert, t.Key, err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, "", nil
}
