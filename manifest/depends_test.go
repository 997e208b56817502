package manifest_test

import (
	"reflect"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

func TestDependencyCycles(t *testing.T) {
	tests := []struct {
		name string
		deps map[string][]string
		want map[string]string
	}{
		{"none", map[string][]string{"web": {"db"}, "db": nil}, map[string]string{}},
		{"two", map[string][]string{"a": {"b"}, "b": {"a"}}, map[string]string{"a": "a -> b -> a", "b": "a -> b -> a"}},
		{"three and a tail", map[string][]string{"x": {"a"}, "a": {"b"}, "b": {"c"}, "c": {"a"}}, map[string]string{"a": "a -> b -> c -> a", "b": "a -> b -> c -> a", "c": "a -> b -> c -> a"}},
		{"a dependency not declared", map[string][]string{"a": {"missing"}}, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := manifest.DependencyCycles(tt.deps); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
