package postgres

import (
	"context"
	"testing"
)

// BenchmarkReset is the cost svclab adds before each run of an app with a
// database: dropping the run's database and copying it from the template
// (the shop's default schema: 1,000 products).
func BenchmarkReset(b *testing.B) {
	if err := Check(); err != nil {
		b.Skipf("PostgreSQL cannot run here: %v", err)
	}
	ctx := context.Background()
	s, err := Start(ctx, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Stop(ctx)
	setup := `CREATE TABLE products (id bigint PRIMARY KEY, name text, price_cents bigint, stock bigint);
INSERT INTO products SELECT i, 'product-' || i, i, 1000000 FROM generate_series(1, 1000) AS i;`
	if err := s.CreateTemplate(ctx, "tmpl", setup); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := s.Reset(ctx, "work", "tmpl"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStart is initdb plus the server's start, paid once per
// experiment, and its stop.
func BenchmarkStart(b *testing.B) {
	if err := Check(); err != nil {
		b.Skipf("PostgreSQL cannot run here: %v", err)
	}
	ctx := context.Background()
	for b.Loop() {
		s, err := Start(ctx, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Stop(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
