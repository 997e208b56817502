package sync

// EventQueueSize is eventQueueSize, for the tests of package sync_test.
const EventQueueSize = eventQueueSize
