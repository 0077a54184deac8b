// Package mountinfo tells which mount a path is on, read from
// /proc/self/mountinfo (proc(5)), and whether that mount keeps locks to
// this node: the merger refuses a repositories volume on NFS mounted with
// local_lock= or nolock, where the flocks that tell a live merger's ref
// lock from a dead one's would not be seen by mergers on other nodes.
package mountinfo
