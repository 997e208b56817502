// Package imagepolicy decides which newer tag an image with an update
// policy (manifest.ImagePolicy) moves to: it checks the policy, reads
// tags as versions keeping their shape (precision, a leading v, a
// suffix such as -alpine), and chooses the newest tag the policy
// allows, saying why every newer tag it passed over was passed over.
// It never moves an image backwards.
package imagepolicy
