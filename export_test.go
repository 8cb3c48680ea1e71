package zkalloc

import "github.com/zkalloc/zkalloc/internal/zksession"

// Credentials returns the ID and password of a's ZooKeeper session, for
// tests that make the server expire it.
func Credentials(a *Allocator) (int64, []byte) { return a.sess.(*zksession.Session).Credentials() }
