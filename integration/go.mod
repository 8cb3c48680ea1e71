module github.com/zkalloc/zkalloc/integration

go 1.26

require (
	github.com/go-zookeeper/zk v1.0.4
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/zkalloc/zkalloc v0.1.0
)
