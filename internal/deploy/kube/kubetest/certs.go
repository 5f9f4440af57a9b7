package kubetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// The control plane's certificates. internal/pki's are workload identities
// (SPIFFE URIs, organisation "svclab"); Kubernetes reads a client's user
// from its common name and its groups from its organisations, so the
// harness makes its own small CA here.

// certValidity covers any test binary's life.
const certValidity = 24 * time.Hour

type certAuthority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newCertAuthority() (*certAuthority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("kubetest: CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "svclab kubetest CA"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("kubetest: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("kubetest: parse CA certificate: %w", err)
	}
	return &certAuthority{cert: cert, key: key}, nil
}

// keyPair is a PEM certificate and its PEM (PKCS #8) key.
type keyPair struct {
	CertPEM, KeyPEM []byte
}

// issue makes a certificate for user cn in groups orgs; a server one also
// names loopback, where the API server listens.
func (ca *certAuthority) issue(cn string, orgs []string, server bool) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("kubetest: key for %s: %w", cn, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     ca.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		tmpl.DNSNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return keyPair{}, fmt.Errorf("kubetest: certificate for %s: %w", cn, err)
	}
	kpem, err := keyPEM(key)
	if err != nil {
		return keyPair{}, fmt.Errorf("kubetest: key for %s: %w", cn, err)
	}
	return keyPair{CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: kpem}, nil
}

func (ca *certAuthority) certPEM() []byte { return pemBlock("CERTIFICATE", ca.cert.Raw) }

// serviceAccountKey is the key the API server signs service-account tokens
// with and the controller manager's token controller uses (PKCS #8), and
// its public half (PKIX), which the API server verifies tokens with: its
// --service-account-key-file reads a public key, or an RSA or SEC 1 EC
// private key, but not PKCS #8.
func serviceAccountKey() (private, public []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("kubetest: service-account key: %w", err)
	}
	if private, err = keyPEM(key); err != nil {
		return nil, nil, fmt.Errorf("kubetest: service-account key: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, fmt.Errorf("kubetest: service-account public key: %w", err)
	}
	return private, pemBlock("PUBLIC KEY", der), nil
}

func keyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pemBlock("PRIVATE KEY", der), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// writePrivate writes b to dir/name, readable by the owner only.
func writePrivate(dir, name string, b []byte) (string, error) {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		return "", fmt.Errorf("kubetest: write %s: %w", p, err)
	}
	return p, nil
}
