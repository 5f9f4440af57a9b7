package load

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
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
	for _, f := range []struct{ key, path string }{{"ca", t.CA}, {"cert", t.Cert}, {"key", t.Key}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return f.key, err
		}
	}
	_, err := t.config()
	return "ca", err
}

// config reads the files into a client's tls.Config.
func (t *TLS) config() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CA != "" {
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return nil, err
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s holds no PEM certificate", t.CA)
		}
	}
	if t.Cert != "" {
		pair, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s and key %s: %w", t.Cert, t.Key, err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}
