package main

// pprofEnv names the address (e.g. 127.0.0.1:6060) of a net/http/pprof
// server for profiling a running hostlet; unset, none is started. It is a
// debugging aid, not part of the config: bind it to a loopback address.
// Only a binary built with the pprof tag serves it.
const pprofEnv = "HOSTLET_PPROF"
