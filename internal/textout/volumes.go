package textout

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	hruntime "github.com/hostlet/hostlet/runtime"
)

// Volumes prints `hostlet volumes`: a row per volume of this instance,
// its kind (persistent, or the pod whose empty dir it is) and the
// containers that use it. The names are the engine's volume and
// container names (Docker allows no control character in either) and the
// pod label this hostlet put on the volume: printed as they are.
func Volumes(w io.Writer, vols []hruntime.VolumeInfo) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tUSED BY")
	for _, v := range vols {
		kind := "persistent"
		if !v.Persistent {
			kind = "pod " + v.Pod
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", v.Name, kind, strings.Join(v.UsedBy, ","))
	}
	return tw.Flush()
}
