package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// pairedRatio is one ratio taken within each repetition: the two blocks of
// a repetition run minutes apart at most, so a drift or a slow stretch of
// the engine over the run moves both sides of it, where a ratio of medians
// can set one side's slow repetition against the other's fast one.
type pairedRatio struct {
	// PerRep is the ratio in each repetition both sides ran, in order.
	PerRep []float64 `json:"perRep"`
	Median float64   `json:"median"`
	// AtMost is how many of PerRep meet the target the ratio is compared
	// with (goalRatio, 1.0 or 1.15): at most it, or, for the same work
	// measured twice (twoSided), within it either way (1/target to
	// target), as 0.90 tells as little as 1.10 there.
	AtMost int `json:"atMostTarget"`
}

// repSamples are the seconds of each cell by repetition.
type repSamples map[key]map[int]float64

func samplesByRep(runs []runRecord) repSamples {
	out := repSamples{}
	for _, rr := range runs {
		k := key{rr.Shape, rr.Variant, rr.Parallelism, rr.N, rr.Step}
		if out[k] == nil {
			out[k] = map[int]float64{}
		}
		out[k][rr.Rep] = rr.Seconds
	}
	return out
}

// paired is a ÷ b in each repetition both ran, and the median of those
// ratios; nil when no repetition has both.
func (s repSamples) paired(a, b key, target float64, twoSided bool) *pairedRatio {
	var p pairedRatio
	for _, rep := range slices.Sorted(maps.Keys(s[a])) {
		x, y := s[a][rep], s[b][rep]
		if x == 0 || y == 0 {
			continue
		}
		p.PerRep = append(p.PerRep, x/y)
		if r := x / y; r <= target && (!twoSided || r >= 1/target) {
			p.AtMost++
		}
	}
	if len(p.PerRep) == 0 {
		return nil
	}
	p.Median, _, _ = stats(p.PerRep)
	return &p
}

// pairedRatios sets the row's ratios within each repetition: hostlet
// (webhook) ÷ the row's fastest floor (the variant and pods at once of
// the fastest median), and the Compose file ÷ Compose's up -d and ÷
// hostlet's native pods.
func (rr *ratioRow) pairedRatios(s repSamples) {
	fl := key{rr.Shape, rr.FloorVariant, rr.FloorParallelism, rr.N, rr.Step}
	at := func(v string) key { return key{rr.Shape, v, 0, rr.N, rr.Step} }
	rr.PairedWebhookOverFloor = s.paired(at(vWebhook), fl, goalRatio, false)
	rr.PairedComposeFileOverUp = s.paired(at(vHostletCompose), at(vComposeUp), 1.0, false)
	rr.PairedComposeFileOverNative = s.paired(at(vHostletCompose), at(vWebhook), 1.15, false)
	if rr.Step != stepUpdate {
		// floor-late-rm differs from the floor only in its update: in
		// the other steps the two make the same calls, and their ratio
		// is what the run can tell apart at all.
		p := rr.FloorParallelism
		rr.PairedSameWork = s.paired(key{rr.Shape, vFloorLateRm, p, rr.N, rr.Step}, key{rr.Shape, vFloor, p, rr.N, rr.Step}, goalRatio, true)
	}
}

// format is the median, the repetitions at most the target, and each
// repetition's ratio: "1.03 (3 of 4: 0.98 1.01 1.05 1.09)".
func (p *pairedRatio) format() string {
	if p == nil {
		return "–"
	}
	each := make([]string, len(p.PerRep))
	for i, x := range p.PerRep {
		each[i] = fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%.2f (%d of %d: %s)", p.Median, p.AtMost, len(p.PerRep), strings.Join(each, " "))
}

// writePaired writes the ratios within each repetition, where a row has
// any and the run had more than one repetition.
func (r *results) writePaired(b *strings.Builder) {
	if r.Config.Reps < 2 {
		return
	}
	var rows []string
	for _, rr := range r.Ratios {
		if rr.PairedWebhookOverFloor == nil && rr.PairedComposeFileOverUp == nil && rr.PairedComposeFileOverNative == nil && rr.PairedSameWork == nil {
			continue
		}
		rows = append(rows, fmt.Sprintf("| %s | %d | %s | %s | %s | %s | %s |\n", rr.Shape, rr.N, rr.Step,
			rr.PairedWebhookOverFloor.format(), rr.PairedComposeFileOverUp.format(), rr.PairedComposeFileOverNative.format(), rr.PairedSameWork.format()))
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "Ratios within each of the %d repetitions (a repetition's blocks run minutes apart at most): median (repetitions at most the target: each ratio, in order); the floor is the row's fastest above:\n\n", r.Config.Reps)
	fmt.Fprintf(b, "| shape | N | step | webhook ÷ floor (≤ %.2f) | Compose file ÷ up -d (≤ 1.00) | Compose file ÷ native (≤ 1.15) | the same calls twice: floor late rm ÷ floor, at the fastest floor's pods at once (%.2f–%.2f) |\n|---|---:|---|---:|---:|---:|---:|\n", goalRatio, 1/goalRatio, goalRatio)
	for _, row := range rows {
		b.WriteString(row)
	}
	b.WriteString("\n")
}
