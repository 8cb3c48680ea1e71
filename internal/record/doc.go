// Package record is the sticky strategy's runner: it reads and writes
// the group's agreed assignment record (package assignment's codec) in
// ZooKeeper, so that every member computes its share from the same
// previous placement (docs/sticky.md).
package record
