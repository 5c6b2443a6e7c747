#!/bin/sh
# Runs a command "on" a simulated host of a cluster test: node_exec.sh NODE CMD [ARGS...] (NODE is node0
# or node1 of the run named by TZC_ID, whose state folder is TZC_STATE; cluster_lib.sh exports both).
# The command gets the node's network namespace (entered with nsenter, not `ip netns exec`, which
# remounts /sys and hides /sys/fs/cgroup: slurmd 22.05 then aborts), its own host name (UTS namespace),
# a private empty /tmp and /dev/shm (mount namespace: Open MPI's and PMIx's session files and shared
# memory stay per node, as on real hosts) and the run's /etc/hosts naming node0 and node1.
# Everything else, the build tree included, is shared, as on a cluster with a shared file system.
node=$1
shift
case "$node" in
  node0 | node1) ;;
  *) echo "node_exec.sh: unknown node '$node' (node0 or node1)" >&2; exit 255 ;;
esac
: "${TZC_ID:?node_exec.sh: TZC_ID is not set (cluster_lib.sh exports it)}"
: "${TZC_STATE:?node_exec.sh: TZC_STATE is not set (cluster_lib.sh exports it)}"
exec nsenter --net="/run/netns/tzc$TZC_ID-$node" unshare --uts --mount --propagation private -- sh -c '
  hostname "$0" &&
  mount -t tmpfs -o size=1g,mode=1777 tmpfs /tmp &&
  mount -t tmpfs -o size=1g,mode=1777 tmpfs /dev/shm &&
  mount --bind "$TZC_STATE/hosts" /etc/hosts &&
  exec "$@"' "$node" "$@"
