package manifest

import (
	"fmt"
	"testing"

	kjson "sigs.k8s.io/json"
)

func TestZZK(t *testing.T) {
	for _, s := range []string{
		`{"id":"a","labels":{"a":"1","a":"2"},"containers":[{"name":"x","name":"y","ports":[{"hostport":1}]}]}`,
		`{"id":"a","labels":{"a":1},"containers":[{"name":"x","ports":[{"hostport":1, "containerPort":"x"}]}]}`,
	} {
		var m Manifest
		strict, err := kjson.UnmarshalStrict([]byte(s), &m)
		fmt.Printf("%v %T\n", err, err)
		for _, e := range strict {
			fmt.Println(" ", e)
		}
	}
}
