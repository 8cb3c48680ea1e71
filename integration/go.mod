module github.com/zkalloc/zkalloc/integration

go 1.26.8

replace github.com/zkalloc/zkalloc => ../

require (
	github.com/go-zookeeper/zk v1.0.4
	github.com/zkalloc/zkalloc v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
)

require github.com/cenkalti/backoff/v4 v4.3.0 // indirect
