package kubetest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The real node's cluster DNS: the manifests name Services
// (hop2.<namespace>.svc, backing-db.<namespace>.svc), so pods need a
// resolver. CoreDNS would be a third large build from the module proxy
// and a pod of its own; what the pods ask of it is only a Service's
// ClusterIP, which this server answers from the API server, on the
// bridge's gateway (the kubelet's clusterDNS). Every other name in
// cluster.local is NXDOMAIN; names outside it are refused (the machine
// has no network beyond itself).

const clusterDomain = "cluster.local"

// dnsServer answers A queries for <service>.<namespace>.svc.cluster.local.
type dnsServer struct {
	conn   net.PacketConn
	client kubernetes.Interface
	done   chan struct{}
}

func startDNS(client kubernetes.Interface, addr string) (*dnsServer, error) {
	conn, err := net.ListenPacket("udp4", addr)
	if err != nil {
		return nil, fmt.Errorf("kubetest: DNS on %s: %w", addr, err)
	}
	s := &dnsServer{conn: conn, client: client, done: make(chan struct{})}
	go s.serve()
	return s, nil
}

func (s *dnsServer) Close() {
	s.conn.Close()
	<-s.done
}

func (s *dnsServer) serve() {
	defer close(s.done)
	buf := make([]byte, 512)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		q := append([]byte(nil), buf[:n]...)
		go func() {
			if resp := s.answer(q); resp != nil {
				_, _ = s.conn.WriteTo(resp, from)
			}
		}()
	}
}

// DNS response codes and types this server uses (RFC 1035).
const (
	rcodeNXDomain = 3
	rcodeRefused  = 5
	typeA         = 1
	classIN       = 1
)

// answer builds the response to one query, or nil for a malformed one.
func (s *dnsServer) answer(q []byte) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return nil
	}
	name, end, ok := parseName(q, 12)
	if !ok || end+4 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[end : end+2])
	resp := make([]byte, 0, end+4+16)
	resp = append(resp, q[:end+4]...)
	// QR, the query's opcode and RD, RA; no answer, authority or extra.
	resp[2] = 0x80 | q[2]&0x79
	resp[3] = 0x80
	binary.BigEndian.PutUint16(resp[6:], 0)
	binary.BigEndian.PutUint32(resp[8:], 0)
	ip, rcode := s.lookup(name)
	resp[3] |= rcode
	if ip == nil || qtype != typeA {
		return resp // NXDOMAIN, REFUSED, or a name with no record of that type
	}
	binary.BigEndian.PutUint16(resp[6:], 1)
	resp = append(resp, 0xc0, 12) // the question's name
	resp = binary.BigEndian.AppendUint16(resp, typeA)
	resp = binary.BigEndian.AppendUint16(resp, classIN)
	resp = binary.BigEndian.AppendUint32(resp, 5) // TTL: Services come and go per run
	resp = binary.BigEndian.AppendUint16(resp, 4)
	return append(resp, ip...)
}

// lookup resolves a name: a Service's ClusterIP, or a response code.
func (s *dnsServer) lookup(name string) (net.IP, byte) {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if name != clusterDomain && !strings.HasSuffix(name, "."+clusterDomain) {
		return nil, rcodeRefused
	}
	rest, ok := strings.CutSuffix(name, ".svc."+clusterDomain)
	svc, ns, two := strings.Cut(rest, ".")
	if !ok || !two || strings.Contains(ns, ".") {
		return nil, rcodeNXDomain
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	got, err := s.client.CoreV1().Services(ns).Get(ctx, svc, metav1.GetOptions{})
	if err != nil {
		return nil, rcodeNXDomain
	}
	ip := net.ParseIP(got.Spec.ClusterIP).To4()
	if ip == nil {
		return nil, rcodeNXDomain // headless, or not IPv4: not asked of this server
	}
	return ip, 0
}

// parseName reads the uncompressed name at off (a query's question has
// no pointers) and returns it with the offset after it.
func parseName(b []byte, off int) (string, int, bool) {
	var labels []string
	for off < len(b) {
		l := int(b[off])
		off++
		if l == 0 {
			return strings.Join(labels, ".") + ".", off, true
		}
		if l > 63 || off+l > len(b) {
			return "", 0, false
		}
		labels = append(labels, string(b[off:off+l]))
		off += l
	}
	return "", 0, false
}
