#!/bin/sh
# Runs a command "on" a simulated host of a cluster test: node_exec.sh NODE CMD [ARGS...] (NODE is node0
# or node1 of the run named by TZC_ID, whose state folder is TZC_STATE; cluster_lib.sh exports both).
# The command gets the node's network namespace (entered with nsenter, not `ip netns exec`, which
# remounts /sys and hides /sys/fs/cgroup: slurmd 22.05 then aborts), its own host name (UTS namespace),
# a private empty /tmp and /dev/shm (mount namespace: Open MPI's and PMIx's session files and shared
# memory stay per node, as on real hosts) and the run's /etc/hosts naming node0 and node1.
# Everything else is shared, as on a cluster with a shared file system; so that this holds wherever the
# checkout, the build or the work folder is, each folder in TZC_BIND_BACK (one a line, each /tmp/NAME or
# /dev/shm/NAME; cluster_lib.sh's tzc_bind_back lists them) is bound back from this machine's /tmp or
# /dev/shm at its own path, read-write.
node=$1
shift
case "$node" in
  node0 | node1) ;;
  *) echo "node_exec.sh: unknown node '$node' (node0 or node1)" >&2; exit 255 ;;
esac
: "${TZC_ID:?node_exec.sh: TZC_ID is not set (cluster_lib.sh exports it)}"
: "${TZC_STATE:?node_exec.sh: TZC_STATE is not set (cluster_lib.sh exports it)}"
# The order matters: the machine's /tmp and /dev/shm are first bound under the state folder (in this
# namespace only), the private tmpfs then covers /tmp and /dev/shm, and the folders to share are bound
# back from those handles; the handles are then detached, so a node sees only what it was given.
exec nsenter --net="/run/netns/tzc$TZC_ID-$node" unshare --uts --mount --propagation private -- sh -c '
  node=$0 view=$TZC_STATE/machine-view
  hostname "$node" && mkdir -p "$view/tmp" "$view/shm" &&
    mount --rbind /tmp "$view/tmp" && mount --rbind /dev/shm "$view/shm" &&
    mount -t tmpfs -o size=1g,mode=1777 tmpfs /tmp &&
    mount -t tmpfs -o size=1g,mode=1777 tmpfs /dev/shm || exit 255
  printf "%s\n" "${TZC_BIND_BACK:-}" | while IFS= read -r dir; do
    case "$dir" in
      "") continue ;;
      /tmp/?*) from=$view/tmp/${dir#/tmp/} ;;
      /dev/shm/?*) from=$view/shm/${dir#/dev/shm/} ;;
      *) echo "node_exec.sh: cannot bind back $dir: not a folder under /tmp or /dev/shm" >&2; exit 255 ;;
    esac
    if [ -d "$from" ]; then mkdir -p "$dir"; else touch "$dir"; fi &&
      mount --rbind "$from" "$dir" || { echo "node_exec.sh: cannot bind $dir back into $node" >&2; exit 255; }
  done || exit 255
  umount -l "$view/tmp" && umount -l "$view/shm" &&
    mount --bind "$TZC_STATE/hosts" /etc/hosts || exit 255
  exec "$@"' "$node" "$@"
