module github.com/refine-go/refine/examples/fleet

go 1.26.0

replace github.com/refine-go/refine => ../..

replace github.com/refine-go/refine/checkpoint/pgcheckpoint => ../../checkpoint/pgcheckpoint

replace github.com/refine-go/refine/iterate/fleet => ../../iterate/fleet

replace github.com/refine-go/refine/examples/research => ../research

require (
	github.com/google/go-cmp v0.7.0
	github.com/jackc/pgx/v5 v5.13.0
	github.com/refine-go/refine v0.4.0
	github.com/refine-go/refine/checkpoint/pgcheckpoint v0.4.0
	github.com/refine-go/refine/examples/research v0.4.0
	github.com/refine-go/refine/iterate/fleet v0.4.0
	go.uber.org/goleak v1.3.0
	go.uber.org/zap v1.28.0
)

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/riverqueue/river v0.51.2 // indirect
	github.com/riverqueue/river/riverdriver v0.51.2 // indirect
	github.com/riverqueue/river/riverdriver/riverpgxv5 v0.51.2 // indirect
	github.com/riverqueue/river/rivershared v0.51.2 // indirect
	github.com/riverqueue/river/rivertype v0.51.2 // indirect
	github.com/tidwall/gjson v1.20.0 // indirect
	github.com/tidwall/match v1.2.0 // indirect
	github.com/tidwall/pretty v1.2.2 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)
