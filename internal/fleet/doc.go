// Package fleet holds what a fleet of hosts shares: the selectors that
// pick hosts by their labels (`role=canary,zone=a`, or `*`).
package fleet
