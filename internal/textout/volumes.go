package textout

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/docker/go-units"

	hruntime "github.com/hostlet/hostlet/runtime"
)

// Volumes prints `hostlet volumes`: a row per volume of this instance,
// its kind (persistent, a data folder, or the pod whose empty dir it is),
// a data folder's size, and the containers that use it. The names are the
// engine's volume and container names and the data folders' (a folder
// name may hold anything: printed cleaned, as Text does).
func Volumes(w io.Writer, vols []hruntime.VolumeInfo) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tSIZE\tUSED BY")
	for _, v := range vols {
		kind, size := "persistent", "-"
		switch {
		case v.Path != "":
			kind, size = "data folder", units.HumanSize(float64(v.SizeBytes))
			if v.Partial {
				size = "≥" + size
			}
		case !v.Persistent:
			kind = "pod " + v.Pod
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", Text(v.Name), kind, size, Text(strings.Join(v.UsedBy, ",")))
	}
	return tw.Flush()
}
