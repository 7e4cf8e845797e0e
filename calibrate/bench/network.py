"""NBD and NFS measured in the throwaway VM, over a veth link shaped with tc.

This host's kernel has neither nbd nor nfs; Debian's kernel in the VM
(:mod:`diskmodel.calibrate.bench.vm`) has both.  One VM run measures every
network setting asked for; all traffic stays inside the guest:

* **Link.** A veth pair: ``dmv0`` (10.77.0.1/24, the server, in the guest's
  own network namespace) and ``dmv1`` (10.77.0.2/24) in a namespace
  ``dmcli`` made for the client; MTU 1500.  A setting
  (:class:`diskmodel.model.stacks.network.Network`) puts on the egress of both
  ends ``netem delay rtt/2`` and below it ``tbf rate R`` with the
  setting's ``burst_bytes`` (:func:`tbf_burst_bytes` gives the usual
  one: the larger of 32 KiB and 1.5 ticks of the rate at HZ=250) and
  latency 100 ms; an
  unshaped setting (rate None, rtt 0) removes the qdiscs.
* **Server stack.** ext4 on the scratch disk ``/dev/vda`` at ``/srv``: the
  NBD export is the file ``/srv/nbd.img``, written in full first (reads
  then hit written blocks, held in the server's page cache); the NFS
  exports are ``/srv/sync`` and ``/srv/async`` (``rw,no_root_squash``,
  with ``sync`` and ``async``).
* **NBD.** ``nbd-server`` (newstyle, the unnamed export) on 10.77.0.1:10809;
  the kernel's client ``nbd-client -L`` (ioctl: the nbd netlink family is
  not visible in another namespace) from the client namespace, 4 KiB
  blocks; ``dd`` with ``iflag=direct``/``oflag=direct`` over ``/dev/nbd0``
  times sequential reads and writes of each request size, one at a time
  (the block layer splits a request above 128 KiB, ``max_sectors_kb``,
  into pieces in flight together).
* **NFS.** The kernel server (``rpcbind``, ``rpc.mountd``, ``rpc.nfsd``
  with 2 threads, the NFSv4 grace period ended at once through
  ``/proc/fs/nfsd/v4_end_grace``) and the kernel client (``mount.nfs``,
  ``vers=3,nolock`` or ``vers=4.2``, ``proto=tcp``), per version and export:
  a write phase (N files of S bytes, each written by ``dd`` and closed,
  which flushes it: close-to-open), then, remounted so the client's cache is
  cold, a read phase (``cat`` of each) and a remove phase (``rm``).

Times come from the guest kernel's clock (``now at`` of
``/proc/timer_list``, nanoseconds) around each phase.  THE VM RUNS UNDER
TCG: every time measures an emulator; reports built from these runs give
orderings and ratios, and say so (:attr:`NetworkRun.accelerator`).

The guest has no Python: the script is ``sh`` text, and every value in it
that comes from the settings or the options (rates, delays, sizes, counts,
addresses, NFS versions and exports) is a word rendered by
:func:`~diskmodel.calibrate.bench.steps.sh_word`, after its check.

Teardown: the guest script's EXIT trap disconnects ``/dev/nbd0``, unmounts,
stops nfsd, mountd, rpcbind and nbd-server, removes the qdiscs, the veth
pair and the namespace, unmounts ``/srv`` and prints a marker the parser
checks; the VM and its files go with :func:`run_script_in_vm`'s teardown
(recorded in the run state), on success, failure and Ctrl-C.  A server
the client cannot reach (``server_ip`` where no server listens) is
:class:`ServerUnreachableError`, one line naming the address.
"""
from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field

from diskmodel.calibrate.bench.steps import sh_word
from diskmodel.model._checks import one_of, show, whole_number
from diskmodel.model.stacks.network import NFS_VERSIONS, Network
from diskmodel.model.units import KIB, MIB

__all__ = ["CLIENT_IP", "SERVER_IP", "NetworkRun", "NetworkBenchError", "ServerUnreachableError", "Timing",
           "network_script", "parse_network_output", "run_network_bench", "run_network_benches", "shaped",
           "tbf_burst_bytes"]

SERVER_IP = "10.77.0.1"
CLIENT_IP = "10.77.0.2"
NBD_PORT = 10809
#: The guest's largest request to /dev/nbd0 (queue/max_sectors_kb) [bytes].
NBD_MAX_REQUEST_BYTES = 128 * KIB
#: Requests per NBD point at most (small requests would take long behind a long round trip).
NBD_MAX_REQUESTS = 200
#: Debian's kernel ticks (CONFIG_HZ=250): tbf's burst must hold at least one tick of the rate.
KERNEL_HZ = 250
_MARK = "@@NET"


class NetworkBenchError(RuntimeError):
    """The guest script failed (the message is one line; the guest's output is in ``output``)."""

    def __init__(self, message: str, output: str = ""):
        super().__init__(message)
        self.output = output


class ServerUnreachableError(NetworkBenchError):
    """The NBD or NFS client could not reach the server at the address named."""


@dataclass(frozen=True)
class Timing:
    """One timed phase: *count* operations (requests or files) of *size_bytes* each, taking *elapsed_s*.

    layer "nbd": op "read"/"write", size the request; layer "nfs": op "write"/"read"/"remove",
    size the file's, with *version* and *export* ("sync"/"async").
    """

    setting: int
    layer: str
    op: str
    size_bytes: int
    count: int
    elapsed_s: float
    version: str = ""
    export: str = ""

    @property
    def per_op_s(self) -> float:
        return self.elapsed_s / self.count

    @property
    def rate_bytes_per_s(self) -> float:
        return self.size_bytes * self.count / self.elapsed_s


@dataclass(frozen=True)
class NetworkRun:
    """What one VM run measured: the settings, the timings, and how the VM ran."""

    settings: tuple
    timings: tuple
    accelerator: str
    kernel_release: str
    ping_rtt_s: tuple = field(default=())
    #: nfsd's largest READ/WRITE payload [bytes] (/proc/fs/nfsd/max_block_size once nfsd ran) and the guest's
    #: MemTotal [bytes] it was chosen from (None: no NFS server in the run)
    nfsd_max_block_bytes: int | None = None
    mem_total_bytes: int | None = None

    def find(self, setting: int, layer: str, op: str, size_bytes: int, version: str = "", export: str = "") -> Timing:
        for t in self.timings:
            if (t.setting, t.layer, t.op, t.size_bytes, t.version, t.export) == (
                    setting, layer, op, size_bytes, version, export):
                return t
        raise KeyError((setting, layer, op, size_bytes, version, export))


def tbf_burst_bytes(rate_bytes_per_s: float) -> int:
    """A tbf bucket for *rate_bytes_per_s*: 1.5 kernel ticks of the rate, at least 32 KiB [bytes]."""
    return max(32 * KIB, int(1.5 * rate_bytes_per_s / KERNEL_HZ))


def shaped(rate_bytes_per_s: float, rtt_s: float) -> Network:
    """The Network this module shapes for a rate and a round trip (with :func:`tbf_burst_bytes`)."""
    return Network(rate_bytes_per_s, rtt_s, burst_bytes=tbf_burst_bytes(rate_bytes_per_s))


def _check_settings(settings) -> tuple[Network, ...]:
    if isinstance(settings, Network) or not isinstance(settings, (tuple, list)) or not settings:
        raise ValueError(f"settings must be a non-empty list of Network (got {show(settings)})")
    for i, s in enumerate(settings):
        if not isinstance(s, Network):
            raise ValueError(f"settings[{i}] must be a Network (got {show(s)})")
        if s.mtu_bytes != 1500:
            raise ValueError(f"settings[{i}].mtu_bytes must be 1500, the veth link's (got {s.mtu_bytes})")
        if s.shaped == (s.rtt_s == 0):
            raise ValueError(f"settings[{i}]: shape both rate and delay, or neither (got {s.describe()})")
        if s.shaped and s.burst_bytes * KERNEL_HZ < s.rate_bytes_per_s:
            raise ValueError(f"settings[{i}].burst_bytes must hold a kernel tick of the rate, at least "
                             f"{math.ceil(s.rate_bytes_per_s / KERNEL_HZ)} (got {s.burst_bytes}); "
                             "tbf_burst_bytes(rate) gives one")
    return tuple(settings)


def _ipv4(name: str, value: str) -> str:
    parts = value.split(".") if isinstance(value, str) else []
    if len(parts) != 4 or not all(p.isdigit() and int(p) < 256 for p in parts):
        raise ValueError(f"{name} must be an IPv4 address (got {show(value)})")
    return value


def _w(value) -> str:
    """A value as one word of the guest's shell (:func:`sh_word` of its text)."""
    return sh_word(str(value))


def _shape(setting: Network) -> str:
    """Shell that shapes both veth ends for *setting* (or unshapes them)."""
    lines = []
    for prefix, dev in (("", "dmv0"), ("ip netns exec dmcli ", "dmv1")):
        lines.append(f"{prefix}tc qdisc del dev {dev} root 2>/dev/null || true")
        if setting.shaped:
            rate = int(round(setting.rate_bytes_per_s))
            burst = setting.burst_bytes
            delay_us = max(1, int(round(setting.rtt_s / 2 * 1e6)))
            lines.append(f"{prefix}tc qdisc add dev {dev} root handle 1: netem delay {_w(f'{delay_us}us')} "
                         "limit 10000")
            lines.append(f"{prefix}tc qdisc add dev {dev} parent 1: handle 2: tbf rate {_w(f'{rate * 8}bit')} "
                         f"burst {_w(burst)} latency 100ms")
    return "\n".join(lines)


_PRELUDE = r"""
now_ns() { awk '/^now at/ {print $3; exit}' /proc/timer_list; }
mark() { echo "@@NET $*"; }
live_servers() {  # the pids of the servers that have not exited (a zombie, not yet reaped, holds nothing)
    for p in $(pidof nbd-server rpc.mountd rpcbind 2>/dev/null); do
        [ "$(awk '{print $3}' /proc/$p/stat 2>/dev/null)" = Z ] || echo "$p"
    done
}
net_teardown() {
    set +e
    [ -n "$DM_NBD" ] && nbd-client -d /dev/nbd0 >/dev/null 2>&1
    [ -n "$DM_NBD_PID" ] && killall nbd-server 2>/dev/null  # the listener and its child per client
    if [ -n "$DM_NFSD" ]; then
        rpc.nfsd 0 >/dev/null 2>&1; exportfs -ua >/dev/null 2>&1
        killall rpc.mountd rpcbind >/dev/null 2>&1
        umount /proc/fs/nfsd 2>/dev/null
    fi
    # killall only sends the signal: wait (up to 5 s) for the servers to be gone, then SIGKILL what is
    # left (twice in full-suite runs a server was still listed after the SIGTERM) and wait again
    i=0; while [ -n "$(live_servers)" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
    killall -9 nbd-server rpc.mountd rpcbind >/dev/null 2>&1
    i=0; while [ -n "$(live_servers)" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
    ip link del dmv0 2>/dev/null
    ip netns del dmcli 2>/dev/null
    grep -q ' /srv ' /proc/mounts && umount /srv
    left=""
    ip link show dmv0 >/dev/null 2>&1 && left="$left veth"
    ip netns list 2>/dev/null | grep -q dmcli && left="$left netns"
    servers=$(live_servers | tr '\n' ' ')
    [ -n "$servers" ] && left="$left servers(${servers% })"
    grep -q ' /srv ' /proc/mounts && left="$left /srv"
    [ "$(cat /sys/block/nbd0/size 2>/dev/null || echo 0)" = 0 ] || left="$left nbd0"
    echo "@@NET TEARDOWN ${left:-clean}"
}
trap net_teardown EXIT
trap 'exit 130' INT TERM
# a module an earlier run of this boot loaded stays (run_network_benches): insmod refuses it again
while read -r m; do
    name=$(basename "$m" .ko | tr - _)
    grep -q "^$name " /proc/modules || insmod "$m"
done < /etc/diskmodel/modules.network
ip link set lo up
ip netns add dmcli
ip link add dmv0 type veth peer name dmv1
ip link set dmv1 netns dmcli
ip addr add SERVER/24 dev dmv0
ip link set dmv0 up
ip netns exec dmcli ip addr add CLIENT/24 dev dmv1
ip netns exec dmcli ip link set dmv1 up
ip netns exec dmcli ip link set lo up
mkfs.ext4 -q -F /dev/vda
mkdir -p /srv
mount /dev/vda /srv
"""


def _nbd_body(setting: int, sizes, total_bytes: int, connect_ip: str) -> str:
    ip, port = _w(connect_ip), _w(NBD_PORT)
    lines = [f"""DM_NBD=1
if ! ip netns exec dmcli nbd-client -L {ip} {port} /dev/nbd0 -b 4096 >/tmp/nbdc.log 2>&1; then
    mark UNREACHABLE nbd {_w(f"{connect_ip}:{NBD_PORT}")} "$(tail -n 1 /tmp/nbdc.log)"
    exit 3
fi"""]
    for size in sizes:
        count = min(max(8, total_bytes // size), NBD_MAX_REQUESTS)
        for op, flags in (("write", "if=/dev/zero of=/dev/nbd0 oflag=direct"),
                          ("read", "if=/dev/nbd0 of=/dev/null iflag=direct")):
            lines.append(f"t0=$(now_ns); dd {flags} {_w(f'bs={size}')} {_w(f'count={count}')} 2>/dev/null; "
                         f"t1=$(now_ns)\n"
                         f"mark TIME {_w(setting)} nbd {op} {_w(size)} {_w(count)} $((t1 - t0)) - -")
    lines.append("nbd-client -d /dev/nbd0 >/dev/null 2>&1; DM_NBD=")
    return "\n".join(lines)


def _nfs_body(setting: int, versions, exports, files: int, file_size: int, connect_ip: str) -> str:
    lines = []
    for version in versions:
        options = "vers=3,nolock" if version == "3" else f"vers={version}"
        for export in exports:
            where = f"{connect_ip}:/srv/{export}"
            mount = (f"timeout 30 mount -t nfs -o {_w(f'{options},proto=tcp,retry=0')} {_w(where)} /mnt/nfs "
                     f">/tmp/mnt.log 2>&1 || {{ echo \"mount failed: $(tail -n 1 /tmp/mnt.log)\"; exit 3; }}")
            n, size = _w(files), _w(file_size)

            def key(op):
                return (f"{_w(setting)} nfs {op} {size} {n} \"$((t1 - t0))\" {_w(version)} {_w(export)}")
            lines.append(f"""cat > /tmp/nfs.sh <<'DM_NFS_EOF'
set -e
now_ns() {{ awk '/^now at/ {{print $3; exit}}' /proc/timer_list; }}
mkdir -p /mnt/nfs
{mount}
t0=$(now_ns); i=0; while [ $i -lt {n} ]; do dd if=/dev/zero of=/mnt/nfs/f$i {_w(f"bs={file_size}")} count=1 2>/dev/null; i=$((i + 1)); done; t1=$(now_ns)
echo @@NET TIME {key('write')}
umount /mnt/nfs
{mount}
t0=$(now_ns); i=0; while [ $i -lt {n} ]; do cat /mnt/nfs/f$i >/dev/null; i=$((i + 1)); done; t1=$(now_ns)
echo @@NET TIME {key('read')}
t0=$(now_ns); i=0; while [ $i -lt {n} ]; do rm /mnt/nfs/f$i; i=$((i + 1)); done; t1=$(now_ns)
echo @@NET TIME {key('remove')}
umount /mnt/nfs
DM_NFS_EOF
if ! ip netns exec dmcli sh /tmp/nfs.sh >/tmp/nfs.log 2>&1; then
    cat /tmp/nfs.log
    if grep -q "mount failed" /tmp/nfs.log; then mark UNREACHABLE nfs {_w(where)} "$(grep 'mount failed' /tmp/nfs.log | tail -n 1)"; fi
    exit 3
fi
grep '^@@NET ' /tmp/nfs.log""")
    return "\n".join(lines)


def network_script(settings, *, nbd_sizes=(4 * KIB, 64 * KIB, 1 * MIB), nbd_bytes: int = 4 * MIB,
                   nfs_versions=("3", "4.2"), nfs_exports=("sync", "async"), nfs_files: int = 20,
                   nfs_file_size_bytes: int = 64 * KIB, export_bytes: int = 64 * MIB, rounds: int = 1,
                   server_ip: str = SERVER_IP) -> str:
    """The guest script measuring NBD and NFS at each of *settings* (the module docstring says how).

    *nbd_bytes*: bytes per (setting, size, read/write) point, between 8
    and :data:`NBD_MAX_REQUESTS` requests; *rounds*: how many times the
    whole sequence of settings is measured, one after the other, so that
    changes in the host's load spread over all settings alike;
    *server_ip*: the address the clients connect to (the server listens
    on :data:`SERVER_IP`; another address in 10.77.0.0/24 is one nobody
    serves).
    """
    settings = _check_settings(settings)
    sizes = tuple(whole_number("nbd_sizes", s, minimum=512, maximum=export_bytes) for s in nbd_sizes)
    for s in sizes:
        if s % 512:
            raise ValueError(f"nbd_sizes must be multiples of 512 bytes (got {s})")
    whole_number("nbd_bytes", nbd_bytes, minimum=512)
    versions = tuple(one_of("nfs_versions", v, NFS_VERSIONS) for v in nfs_versions)
    exports = tuple(one_of("nfs_exports", e, ("sync", "async")) for e in nfs_exports)
    files = whole_number("nfs_files", nfs_files, minimum=1)
    file_size = whole_number("nfs_file_size_bytes", nfs_file_size_bytes, minimum=1)
    export = whole_number("export_bytes", export_bytes, minimum=1 * MIB)
    if export % MIB:
        raise ValueError(f"export_bytes must be a whole number of MiB (got {export})")
    ip = _ipv4("server_ip", server_ip)
    rounds = whole_number("rounds", rounds, minimum=1)
    parts = [_PRELUDE.replace("SERVER", SERVER_IP).replace("CLIENT", CLIENT_IP)]
    if sizes:
        parts.append(f"""dd if=/dev/zero of=/srv/nbd.img bs=1M {_w(f"count={export // MIB}")} 2>/dev/null
DM_NBD_PID=starting  # the teardown kills nbd-server by name, whether or not its pid file came
nbd-server -C /dev/null {SERVER_IP}:{NBD_PORT} /srv/nbd.img -p /run/nbd.pid 2>/dev/null
# nbd-server writes its pid file after it has forked into the background: wait for it (under load it came
# after a bare `cat` had already failed)
i=0; while [ ! -s /run/nbd.pid ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
[ -s /run/nbd.pid ] || {{ echo "nbd-server wrote no pid file in 10 s"; exit 3; }}
DM_NBD_PID=$(cat /run/nbd.pid)""")
    if versions and exports:
        parts.append(f"""DM_NFSD=1
grep -q '^_rpc:' /etc/passwd || echo '_rpc:x:100:65534::/run/rpcbind:/usr/sbin/nologin' >> /etc/passwd
grep -q '^nogroup:' /etc/group || echo 'nogroup:x:65534:' >> /etc/group
mkdir -p /run/rpcbind /var/lib/nfs/v4recovery /srv/sync /srv/async
touch /var/lib/nfs/etab /var/lib/nfs/rmtab
rpcbind -w
mount -t nfsd nfsd /proc/fs/nfsd
echo 10 > /proc/fs/nfsd/nfsv4leasetime
echo 10 > /proc/fs/nfsd/nfsv4gracetime
cat > /etc/exports <<'DM_EXPORTS_EOF'
/srv/sync {SERVER_IP.rsplit('.', 1)[0]}.0/24(rw,sync,no_subtree_check,no_root_squash,fsid=1)
/srv/async {SERVER_IP.rsplit('.', 1)[0]}.0/24(rw,async,no_subtree_check,no_root_squash,fsid=2)
DM_EXPORTS_EOF
exportfs -ra
rpc.mountd
rpc.nfsd 2
mark NFSD $(cat /proc/fs/nfsd/max_block_size) $(awk '/^MemTotal:/ {{print $2}}' /proc/meminfo)
echo Y > /proc/fs/nfsd/v4_end_grace""")
    for i, setting in [(i, s) for _ in range(rounds) for i, s in enumerate(settings)]:
        parts.append(_shape(setting))
        parts.append(f"mark PING {_w(i)} $(ip netns exec dmcli ping -c 5 -i 0.2 -q {SERVER_IP} | "
                     "awk -F/ '/round-trip|rtt/ {print $4}')")
        if sizes:
            parts.append(_nbd_body(i, sizes, nbd_bytes, ip))
        if versions and exports:
            parts.append(_nfs_body(i, versions, exports, files, file_size, ip))
    parts.append("mark DONE")
    return "\n".join(parts) + "\n"


_TIME_RE = re.compile(r"^@@NET TIME (\d+) (nbd|nfs) (\w+) (\d+) (\d+) (\d+) (\S+) (\S+)\s*$")


def parse_network_output(output: str, settings, *, accelerator: str = "tcg", kernel_release: str = "",
                         returncode: int = 0) -> NetworkRun:
    """The :class:`NetworkRun` of :func:`network_script`'s output; NetworkBenchError (one line) when it failed."""
    settings = _check_settings(settings)
    lines = output.replace("\r", "").splitlines()
    teardown = [ln.split()[2:] for ln in lines if ln.startswith(f"{_MARK} TEARDOWN")]
    for ln in lines:
        if ln.startswith(f"{_MARK} UNREACHABLE "):
            _, _, layer, address, *why = ln.split(" ")
            reason = " ".join(why).strip('"') or "no answer"
            raise ServerUnreachableError(f"cannot reach the {layer.upper()} server at {address}: {reason}", output)
    if returncode != 0 or not any(ln == f"{_MARK} DONE" for ln in lines):
        last = next((ln for ln in reversed(lines) if ln.strip() and not ln.startswith(_MARK)), "no output")
        raise NetworkBenchError(f"the network measurement failed in the guest (status {returncode}): {last}",
                                output)
    if teardown != [["clean"]]:
        raise NetworkBenchError(f"the guest's teardown left {' '.join(sum(teardown, [])) or 'no report'}", output)
    timings = []
    pings: dict[int, list] = {}
    nfsd = next((ln.split()[2:] for ln in lines if ln.startswith(f"{_MARK} NFSD ")), None)
    nfsd = (int(nfsd[0]), int(nfsd[1]) << 10) if nfsd and len(nfsd) == 2 and all(w.isdigit() for w in nfsd) else None
    for ln in lines:
        m = _TIME_RE.match(ln)
        if m:
            s, layer, op, size, count, ns, version, export = m.groups()
            timings.append(Timing(int(s), layer, op, int(size), int(count), int(ns) * 1e-9,
                                  "" if version == "-" else version, "" if export == "-" else export))
        elif ln.startswith(f"{_MARK} PING "):
            words = ln.split()
            if len(words) == 4:
                pings.setdefault(int(words[2]), []).append(float(words[3]) * 1e-3)
    return NetworkRun(settings, tuple(timings), accelerator, kernel_release,
                      tuple(statistics.median(pings[i]) if i in pings else math.nan for i in range(len(settings))),
                      *(nfsd or (None, None)))


def run_network_bench(settings, *, timeout_s: float = 900, memory_bytes: int = 1 << 30, log=None,
                      **script_options) -> NetworkRun:
    """Boot the VM, measure NBD and NFS at each of *settings* (:func:`network_script`'s options), tear down.

    Raises ServerUnreachableError (one line naming the address) when a
    client cannot reach its server, NetworkBenchError when the script fails.
    """
    (run,) = run_network_benches([(settings, script_options)], timeout_s=timeout_s, memory_bytes=memory_bytes,
                                 log=log)
    if isinstance(run, NetworkBenchError):
        raise run
    return run


def _one_boot(scripts: list[str], folder: str = "/tmp") -> str:
    """One guest script running each of *scripts* in turn, each in its own ``sh -e`` (its EXIT trap tears its
    link and servers down before the next starts) between ``@@NET PART BEGIN i`` and ``@@NET PART END i
    STATUS``, whatever the status of the one before. Each is written to *folder* through a here-document whose
    delimiter is quoted, so the guest's shell expands nothing in it."""
    out = ["set +e"]
    for i, text in enumerate(scripts):
        delimiter = f"DISKMODEL_NET_PART_{i}_END_OF_SCRIPT"
        if any(line == delimiter for line in text.splitlines()):
            raise ValueError(f"run {i}'s script holds its own here-document delimiter {delimiter}")
        path = sh_word(f"{folder}/diskmodel-net-{i}.sh")
        out += [f"cat > {path} <<'{delimiter}'", text.rstrip("\n"), delimiter,
                f"echo {_MARK} PART BEGIN {i}", f"sh -e {path}", "rc=$?",
                f"echo {_MARK} PART END {i} $rc"]
    out.append("exit 0")
    return "\n".join(out) + "\n"


def run_network_benches(runs, *, timeout_s: float = 900, memory_bytes: int = 1 << 30, log=None) -> list:
    """Boot the VM once and measure each of *runs* in turn, each a pair (settings, :func:`network_script`'s
    options), as :func:`run_network_bench` would one at a time; tear down.

    Returns for each run its :class:`NetworkRun`, or the ServerUnreachableError or NetworkBenchError it ended
    in (a run that fails does not stop the next).
    """
    from diskmodel.calibrate.bench.vm import run_script_in_vm

    runs = [(_check_settings(settings), dict(options)) for settings, options in runs]
    scripts = [network_script(settings, **options) for settings, options in runs]
    export = max(options.get("export_bytes", 64 * MIB) for _, options in runs)
    result = run_script_in_vm(_one_boot(scripts), scratch_disk_bytes=export + 256 * MIB,
                              memory_bytes=memory_bytes, timeout_s=timeout_s, log=log)
    text = result.output.replace("\r", "")
    found = []
    for i, (settings, _) in enumerate(runs):
        part = re.search(rf"^{_MARK} PART BEGIN {i}\n(.*?)^{_MARK} PART END {i} (\d+)$", text, re.S | re.M)
        if part:
            output, returncode = part.group(1), int(part.group(2))
        else:   # the guest stopped inside this run or before it: it failed with what it said after its start
            begin = text.find(f"{_MARK} PART BEGIN {i}\n")
            output, returncode = (text[begin:] if begin >= 0 else ""), result.returncode or 1
        try:
            found.append(parse_network_output(output, settings, accelerator=result.accelerator,
                                              kernel_release=result.kernel_release, returncode=returncode))
        except NetworkBenchError as error:
            found.append(error)
    return found
