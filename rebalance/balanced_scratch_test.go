package rebalance

import (
	"fmt"
	"reflect"
	"testing"
)

// TestBalancedScratchBytes checks that bytes counts every slice of
// balancedScratch, so that the cap on what goes back to the pool holds
// when a field is added.
func TestBalancedScratchBytes(t *testing.T) {
	t.Parallel()
	members := []string{"a", "b", "c", "d", "e"}
	parts := make([]Partition, 1000)
	for i := range parts {
		parts[i] = Partition{Topic: "t", ID: int32(i)}
	}
	s := new(balancedScratch)
	s.owners(members, parts)
	// A ring with more points than there are partitions takes the
	// sorted lookup, which has buffers of its own.
	many := make([]string, 50)
	for i := range many {
		many[i] = fmt.Sprint("m", i)
	}
	s.owners(many, parts[:100])
	resize(&s.next, len(members))

	want := 0
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Slice {
			t.Fatalf("field %s is a %s, not a slice: count it in bytes and here", v.Type().Field(i).Name, f.Kind())
		}
		if f.Cap() == 0 {
			t.Errorf("field %s is unused by calls with shed partitions and both lookups", v.Type().Field(i).Name)
		}
		want += f.Cap() * int(f.Type().Elem().Size())
	}
	if got := s.bytes(); got != want {
		t.Errorf("bytes() = %d, want %d", got, want)
	}
}
