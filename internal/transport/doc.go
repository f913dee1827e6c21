// Package transport holds what the network entrypoints (httpentry, grpcentry) share
// so that each is written once: the key pair of Config.CertFile and Config.KeyFile,
// the defaulting of their duration and size fields, the registration of their RED
// metrics all or none, and the listening socket Bind opens.
package transport
