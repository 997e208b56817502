package main

import (
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostlet/hostlet/internal/redact"
	"github.com/hostlet/hostlet/internal/textout"
	"github.com/hostlet/hostlet/sources"
)

// dialFleetEtcd returns a client of endpoints and the wrapper of its
// errors: neither ever quotes an endpoint's credentials.
func dialFleetEtcd(endpoints []string) (*clientv3.Client, func(error) error, error) {
	cli, err := sources.DialEtcd(endpoints)
	if err != nil {
		return nil, nil, redact.Error(err, endpoints...)
	}
	return cli, func(err error) error {
		return redact.Error(fmt.Errorf("etcd %s: %w", textout.Endpoints(endpoints), err), endpoints...)
	}, nil
}
