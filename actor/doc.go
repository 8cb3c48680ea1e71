// Package actor is the small runtime every zkalloc actor is built on. It
// imports only the standard library. Users of zkalloc need it only to
// write actors of their own in the same style, or tests that drive an
// actor on a fake clock.
//
// An actor is a value with a Run(ctx) method that runs in the caller's
// goroutine, owns its state, receives typed messages and returns only when
// everything it started has stopped. The package gives actors:
//
//   - [Actor] and [Func], the contract;
//   - [Group], which runs actors together and, when the first one returns,
//     cancels the rest and waits for all of them;
//   - [Send] and [Call], mailbox sends that never block past shutdown;
//   - [Outbox], a latest-wins output that a slow reader cannot hold up;
//   - [Clock] and [Timer], the injected time source ([RealClock] in
//     production, [FakeClock] in tests).
package actor
