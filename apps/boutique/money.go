package boutique

import (
	"fmt"
	"math/big"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/svclab/svclab/proto/boutique"
)

// nanosPerUnit is 10^9, the nanos in one unit of Money.
const nanosPerUnit = 1_000_000_000

// nanosOf is m as a whole number of nanos, exact for every amount below
// 9.2 billion units.
func nanosOf(m *pb.Money) int64 { return m.GetUnits()*nanosPerUnit + int64(m.GetNanos()) }

// money is n nanos of currency code, with units and nanos of one sign, as
// Money requires.
func money(code string, n int64) *pb.Money {
	return &pb.Money{CurrencyCode: code, Units: n / nanosPerUnit, Nanos: int32(n % nanosPerUnit)}
}

// validMoney reports whether m keeps Money's invariants.
func validMoney(m *pb.Money) error {
	u, n := m.GetUnits(), m.GetNanos()
	switch {
	case n <= -nanosPerUnit || n >= nanosPerUnit:
		return fmt.Errorf("nanos %d outside ±999,999,999", n)
	case (u > 0 && n < 0) || (u < 0 && n > 0):
		return fmt.Errorf("units %d and nanos %d have different signs", u, n)
	}
	return nil
}

// sum adds amounts of one currency.
func sum(code string, ms ...*pb.Money) (*pb.Money, error) {
	var n int64
	for _, m := range ms {
		if m.GetCurrencyCode() != code {
			return nil, status.Errorf(codes.Internal, "adding %s to %s", m.GetCurrencyCode(), code)
		}
		n += nanosOf(m)
	}
	return money(code, n), nil
}

// times is m × q.
func times(m *pb.Money, q int32) *pb.Money {
	return money(m.GetCurrencyCode(), nanosOf(m)*int64(q))
}

// convert turns m into currency to through the euro, as the original's
// currency service does: amount / rate(from) × rate(to). The arithmetic is
// exact (rationals), rounded down to a whole nano once at the end; the
// original rounds in floating point at each step, which can differ by a
// few nanos.
func (r rates) convert(m *pb.Money, to string) (*pb.Money, error) {
	from, ok := r[m.GetCurrencyCode()]
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "unsupported currency %q", m.GetCurrencyCode())
	}
	rate, ok := r[to]
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "unsupported currency %q", to)
	}
	if err := validMoney(m); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "amount: %v", err)
	}
	x := new(big.Rat).SetInt64(nanosOf(m))
	x.Mul(x, rate).Quo(x, from)
	// Quo truncates toward zero, which is "down" for the positive
	// amounts of a shop.
	n := new(big.Int).Quo(x.Num(), x.Denom())
	if !n.IsInt64() {
		return nil, status.Errorf(codes.OutOfRange, "%s in %s is too large", show(m), to)
	}
	return money(to, n.Int64()), nil
}

// show writes m as the pages do: "USD 19.99".
func show(m *pb.Money) string {
	n := nanosOf(m)
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	return fmt.Sprintf("%s %s%d.%02d", m.GetCurrencyCode(), sign, n/nanosPerUnit, n%nanosPerUnit/10_000_000)
}
