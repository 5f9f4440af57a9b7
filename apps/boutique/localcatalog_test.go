package boutique

import (
	"context"

	"google.golang.org/grpc"

	pb "github.com/svclab/svclab/proto/boutique"
)

// localCatalog calls a productCatalog directly, for tests of one
// component without a host.
type localCatalog struct{ s *productCatalog }

func (l localCatalog) ListProducts(ctx context.Context, in *pb.Empty, _ ...grpc.CallOption) (*pb.ListProductsResponse, error) {
	return l.s.ListProducts(ctx, in)
}

func (l localCatalog) GetProduct(ctx context.Context, in *pb.GetProductRequest, _ ...grpc.CallOption) (*pb.Product, error) {
	return l.s.GetProduct(ctx, in)
}

func (l localCatalog) SearchProducts(ctx context.Context, in *pb.SearchProductsRequest, _ ...grpc.CallOption) (*pb.SearchProductsResponse, error) {
	return l.s.SearchProducts(ctx, in)
}
