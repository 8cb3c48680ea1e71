// Package hook lets package zkalloctest make the root package's Updates
// without the root package exporting how: zkalloc sets [NewUpdate] in its
// init, and zkalloctest, which imports zkalloc, reads it. The value is an
// any because this package cannot import zkalloc's types.
package hook

// NewUpdate is zkalloc's func(member.Update) zkalloc.Update.
var NewUpdate any
