// Package pki is a deployment's own certificate authority, for mutual TLS
// between its processes (deploy.mtls).
//
// Each deployment gets a fresh CA (ECDSA P-256) that lives only as long as
// the deployment, and one leaf certificate per component whose identity is
// a SPIFFE-style URI SAN, spiffe://svclab/<run>/<component>, as a mesh's
// workload certificates are. Keys are written only into the deployment's
// private temp dir (internal/tempdir), mode 0600, and go with it at
// teardown; the CA's key is never written at all.
//
// The tls.Config builders make TLS 1.3 only. A server demands a client
// certificate that chains to the run's CA and names a workload of the same
// run; a client checks the server's chain against the run's CA and its URI
// SAN against the component it meant to call, since Go's hostname check
// knows nothing of URI SANs.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// TrustDomain is the SPIFFE trust domain of every svclab identity.
const TrustDomain = "svclab"

// Validity of the CA and leaves: a run is minutes long, and a short life
// bounds what a leaked key is worth. The clock skew allowance backdates
// NotBefore.
const (
	Validity  = 24 * time.Hour
	clockSkew = 5 * time.Minute
)

// ID is the SPIFFE ID of a component of a run.
func ID(run, component string) *url.URL {
	return &url.URL{Scheme: "spiffe", Host: TrustDomain, Path: "/" + run + "/" + component}
}

// CA is a run's certificate authority. Its key stays in memory.
type CA struct {
	run  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// NewCA makes a fresh CA for run, a name that becomes the first path
// segment of every identity it issues (the deployment's id).
func NewCA(run string) (*CA, error) {
	if err := checkSegment("run", run); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: CA key for run %s: %w", run, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{"svclab"}, CommonName: "svclab run " + run + " CA"},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(Validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		URIs:                  []*url.URL{{Scheme: "spiffe", Host: TrustDomain}},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("pki: CA certificate for run %s: %w", run, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("pki: parse CA certificate: %w", err)
	}
	return &CA{run: run, cert: cert, key: key, pem: pemBlock("CERTIFICATE", der)}, nil
}

// Run is the run the CA serves.
func (ca *CA) Run() string { return ca.run }

// Certificate is the CA's certificate.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// Leaf is an issued certificate and its key, PEM-encoded.
type Leaf struct {
	ID      *url.URL
	CertPEM []byte
	KeyPEM  []byte
}

// Issue makes a leaf for component, good for both ends of a connection.
// Besides its URI SAN it names localhost and the loopback addresses, so
// that curl and openssl s_client can check it by the address they dial.
func (ca *CA) Issue(component string) (*Leaf, error) {
	if err := checkSegment("component", component); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: key for %s: %w", component, err)
	}
	id := ID(ca.run, component)
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{Organization: []string{"svclab"}, CommonName: component},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     ca.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		URIs:         []*url.URL{id},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("pki: certificate for %s: %w", component, err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("pki: encode key for %s: %w", component, err)
	}
	return &Leaf{ID: id, CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", kder)}, nil
}

// Files are where a component's credentials are on disk: what a host is
// handed (HostConfig's TLS paths) and what the builders below read.
type Files struct {
	Cert string // the leaf, PEM
	Key  string // its key, PKCS#8 PEM, mode 0600
	CA   string // the run's CA certificate, PEM
}

// CAFile is the name of the CA certificate in the directory Write uses.
const CAFile = "ca.pem"

// WriteCA writes the CA certificate (never its key) into dir and returns
// its path.
func (ca *CA) WriteCA(dir string) (string, error) {
	p := filepath.Join(dir, CAFile)
	if err := writePrivate(p, ca.pem); err != nil {
		return "", err
	}
	return p, nil
}

// Write issues a leaf for component and writes it, its key and the CA
// certificate into dir, which should be private to the deployment (see
// internal/tempdir). Every file is mode 0600.
func (ca *CA) Write(dir, component string) (Files, error) {
	leaf, err := ca.Issue(component)
	if err != nil {
		return Files{}, err
	}
	caPath, err := ca.WriteCA(dir)
	if err != nil {
		return Files{}, err
	}
	f := Files{
		Cert: filepath.Join(dir, component+".pem"),
		Key:  filepath.Join(dir, component+".key"),
		CA:   caPath,
	}
	if err := writePrivate(f.Cert, leaf.CertPEM); err != nil {
		return Files{}, err
	}
	if err := writePrivate(f.Key, leaf.KeyPEM); err != nil {
		return Files{}, err
	}
	return f, nil
}

// writePrivate writes b to p with mode 0600, replacing what was there.
func writePrivate(p string, b []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	// A file that existed keeps its mode through O_TRUNC.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("pki: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("pki: write %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("pki: write %s: %w", p, err)
	}
	return nil
}

// Identity is what the builders load from Files: the certificate a side
// presents, the pool it trusts, and the run it belongs to.
type Identity struct {
	Cert  tls.Certificate
	Roots *x509.CertPool
	// ID is the leaf's SPIFFE ID; Run its run.
	ID  *url.URL
	Run string
}

// Load reads and checks f: the leaf must chain to the CA and carry a
// svclab SPIFFE ID.
func Load(f Files) (*Identity, error) {
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("pki: load %s and %s: %w", f.Cert, f.Key, err)
	}
	roots, err := CertPool(f.CA)
	if err != nil {
		return nil, err
	}
	id, run, err := identity(cert.Leaf)
	if err != nil {
		return nil, fmt.Errorf("pki: %s: %w", f.Cert, err)
	}
	if _, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return nil, fmt.Errorf("pki: %s is not issued by the CA in %s: %w", f.Cert, f.CA, err)
	}
	return &Identity{Cert: cert, Roots: roots, ID: id, Run: run}, nil
}

// CertPool reads the CA certificates of a PEM file.
func CertPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("pki: %s holds no PEM certificate", path)
	}
	return pool, nil
}

// ServerConfig is the TLS 1.3 configuration of a server with identity id:
// it demands a client certificate that chains to the run's CA and names a
// workload of the same run.
func ServerConfig(id *Identity) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{id.Cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    id.Roots,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("pki: client presented no certificate")
			}
			_, run, err := identity(cs.PeerCertificates[0])
			if err != nil {
				return fmt.Errorf("pki: client: %w", err)
			}
			if run != id.Run {
				return fmt.Errorf("pki: client belongs to run %s, not %s", run, id.Run)
			}
			return nil
		},
	}
}

// ClientConfig is the TLS 1.3 configuration of a client with identity id
// that calls server, a component of the same run: it presents id's
// certificate and accepts only a server whose chain ends at the run's CA
// and whose URI SAN is server's SPIFFE ID.
func ClientConfig(id *Identity, server string) *tls.Config {
	want := ID(id.Run, server).String()
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{id.Cert},
		RootCAs:      id.Roots,
		// The default check matches a host name or IP; the identity is the
		// URI SAN, which VerifyConnection checks after verifying the chain
		// itself.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return verifyServer(cs, id.Roots, want)
		},
	}
}

func verifyServer(cs tls.ConnectionState, roots *x509.CertPool, want string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("pki: server presented no certificate")
	}
	leaf := cs.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: inter,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}); err != nil {
		return fmt.Errorf("pki: server certificate: %w", err)
	}
	for _, u := range leaf.URIs {
		if u.String() == want {
			return nil
		}
	}
	return fmt.Errorf("pki: server is %v, not %s", leaf.URIs, want)
}

// identity reads a leaf's svclab SPIFFE ID and the run it names.
func identity(c *x509.Certificate) (*url.URL, string, error) {
	for _, u := range c.URIs {
		if u.Scheme != "spiffe" || u.Host != TrustDomain {
			continue
		}
		parts := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
		if len(parts) == 2 && parts[0] != "" && parts[1] != "" {
			return u, parts[0], nil
		}
	}
	return nil, "", fmt.Errorf("certificate %q has no spiffe://%s/<run>/<component> URI SAN", c.Subject.CommonName, TrustDomain)
}

// checkSegment keeps names usable as one path segment of a SPIFFE ID and
// as a file name.
func checkSegment(what, s string) error {
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\\ \x00?#%") {
		return fmt.Errorf("pki: %s %q cannot name an identity", what, s)
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(fmt.Sprintf("pki: crypto/rand: %v", err)) // crypto/rand does not fail on Linux
	}
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
