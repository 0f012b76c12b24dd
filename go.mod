module github.com/refine-go/refine

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	go.uber.org/goleak v1.3.0
	go.uber.org/zap v1.28.0
	golang.org/x/sync v0.25.0
)

require go.uber.org/multierr v1.10.0 // indirect
