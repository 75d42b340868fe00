"""A private single-node Slurm on loopback, for the leases tests: `python -m redfirst.leases.minislurm up|down PREFIX`.

Everything lives under PREFIX: its own `slurm.conf` (`SLURM_CONF`), munge key and socket,
state and spool folders, log files and free ports. It never reads or writes `/etc/slurm` or
`/etc/munge`, never creates a device node (the GPU GRES is a count, `File=` a plain file), and
`down` stops every daemon it started (by the pids it recorded) and the job steps they left.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "slurmrestd")
NEEDED = ("munged", "slurmctld", "slurmd", "sinfo", "salloc", "srun", "scancel", "squeue", "scontrol")
REST_USER = "nobody"     # slurmrestd refuses root; an existing unprivileged user, so no useradd


class ClusterError(RuntimeError):
    """The private cluster did not come up; the message names the log to read."""


class LeftRunning(ClusterError):
    """A daemon or job step of a private cluster outlived its stop."""


@dataclass(frozen=True)
class Cluster:
    prefix: Path
    node: str
    conf: Path
    rest: str | None          # http://127.0.0.1:PORT, or None when slurmrestd is not installed

    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}


def etc_digest(root: Path = Path("/etc/slurm")) -> dict[str, str]:
    """What a host's Slurm config folder holds (path -> sha256), to prove a run never wrote it."""
    if not root.exists():
        return {}
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


def missing_commands() -> list[str]:
    return [c for c in NEEDED if shutil.which(c) is None]


def _free_ports(n: int) -> list[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def _conf(prefix: Path, node: str, ports: list[int], kill_wait: int, gpus: int = 1) -> str:
    # Small timeouts: a test cluster, where a job's end should be seen within seconds.
    return f"""\
ClusterName=gates
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={ports[0]}
SlurmdPort={ports[1]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={prefix}/munge/munge.socket
CredType=cred/munge
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key={prefix}/jwt_hs256.key
StateSaveLocation={prefix}/ctld
SlurmdSpoolDir={prefix}/slurmd
SlurmctldPidFile={prefix}/run/slurmctld.pid
SlurmdPidFile={prefix}/run/slurmd.pid
SlurmctldLogFile={prefix}/log/slurmctld.log
SlurmdLogFile={prefix}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
LaunchParameters=use_interactive_step
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
GresTypes=gpu
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait={kill_wait}
OverTimeLimit=0
MinJobAge=2
SchedulerParameters=bf_interval=1
NodeName={node} NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 1} RealMemory=2000 Gres=gpu:h200:{gpus} Features=thor State=UNKNOWN
PartitionName=gpu Nodes={node} Default=YES MaxTime=60 State=UP
"""


def _run(argv: list[str], env: dict[str, str], timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env={**os.environ, **env},
                          check=False)


def up(prefix: Path, kill_wait: int = 1, rest: bool = True, gpus: int = 1) -> Cluster:
    """Start munged, slurmctld, slurmd (and slurmrestd when installed) under `prefix`; wait for an idle node
    with `gpus` GPU GRES slots (each one a link to /dev/null)."""
    missing = missing_commands()
    if missing:
        raise ClusterError(f"Slurm/munge not installed: {', '.join(missing)} not found (run .ci/setup as root)")
    if os.geteuid() != 0:
        raise ClusterError("a private Slurm needs root (slurmd runs jobs as their users)")
    prefix = prefix.resolve()
    for d in ("munge", "ctld", "slurmd", "run", "log"):
        (prefix / d).mkdir(parents=True, exist_ok=True)
    prefix.chmod(0o755)     # slurmrestd (as nobody) reads slurm.conf
    node = socket.gethostname().split(".")[0]
    key = prefix / "munge" / "munge.key"
    if not key.exists():
        key.write_bytes(secrets.token_bytes(1024))
    key.chmod(0o400)
    (prefix / "munge").chmod(0o700)
    jwt = prefix / "jwt_hs256.key"
    if not jwt.exists():
        jwt.write_bytes(secrets.token_bytes(32))
    jwt.chmod(0o600)
    ports = _free_ports(3)
    conf = prefix / "slurm.conf"
    conf.write_text(_conf(prefix, node, ports, kill_wait, gpus))
    # Without File= a gpu GRES puts the node INVAL on 22.05, and a plain file sets no CUDA_VISIBLE_DEVICES:
    # a link to /dev/null is an existing character device, no mknod.
    for i in range(gpus):
        with contextlib.suppress(FileNotFoundError):
            (prefix / f"fakegpu{i}").unlink()
        (prefix / f"fakegpu{i}").symlink_to("/dev/null")
    files = f"{prefix}/fakegpu[0-{gpus - 1}]" if gpus > 1 else f"{prefix}/fakegpu0"
    (prefix / "gres.conf").write_text(f"NodeName={node} Name=gpu Type=h200 File={files}\n")
    for f in (conf, prefix / "gres.conf"):
        f.chmod(0o644)
    env = {"SLURM_CONF": str(conf)}
    cluster = Cluster(prefix, node, conf, None)
    try:
        m = prefix / "munge"
        out = _run(["munged", f"--socket={m}/munge.socket", f"--key-file={key}", f"--pid-file={m}/munged.pid",
                    f"--log-file={prefix}/log/munged.log", f"--seed-file={m}/munged.seed", "--force"], env)
        if out.returncode != 0:
            raise ClusterError(f"munged failed: {out.stderr.strip()} (see {prefix}/log/munged.log)")
        for daemon in ("slurmctld", "slurmd"):
            out = _run([daemon, "-f", str(conf)], env)
            if out.returncode != 0:
                raise ClusterError(f"{daemon} failed: {out.stderr.strip()} (see {prefix}/log/{daemon}.log)")
        _wait_idle(cluster)
        if rest and shutil.which("slurmrestd"):
            cluster = Cluster(prefix, node, conf, _start_rest(prefix, conf, ports[2]))
    except BaseException:
        down(prefix)
        raise
    return cluster


def _wait_idle(cluster: Cluster, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    state = ""
    while time.monotonic() < end:
        out = _run(["sinfo", "-h", "-N", "-n", cluster.node, "-o", "%T"], cluster.env())
        state = out.stdout.strip().splitlines()[0] if out.stdout.strip() else out.stderr.strip()
        if state.rstrip("*") in ("idle", "mixed", "allocated"):
            return
        if state.startswith(("drain", "down", "inval")):
            _run(["scontrol", "update", f"nodename={cluster.node}", "state=resume"], cluster.env())
        time.sleep(0.2)
    raise ClusterError(f"node {cluster.node} is {state!r}, not idle (see {cluster.prefix}/log/)")


def _spawn_rest(prefix: Path, conf: Path, port: int, plugins: str, log_name: str) -> subprocess.Popen[bytes]:
    log = open(prefix / "log" / log_name, "ab")   # noqa: SIM115 - the daemon keeps it
    proc = subprocess.Popen(["slurmrestd", "-f", str(conf), "-a", "rest_auth/jwt", "-s", plugins,
                             "-u", REST_USER, "-g", "nogroup", f"127.0.0.1:{port}"],
                            env={**os.environ, "SLURM_CONF": str(conf), "SLURM_JWT": "daemon"},
                            stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
    log.close()
    return proc


def _listening(proc: subprocess.Popen[bytes], port: int) -> str | None:
    end = time.monotonic() + 15
    while time.monotonic() < end and proc.poll() is None:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return f"http://127.0.0.1:{port}"
        time.sleep(0.1)
    return None


def _start_rest(prefix: Path, conf: Path, port: int) -> str | None:
    proc = _spawn_rest(prefix, conf, port, "openapi/v0.0.38", "slurmrestd.log")
    (prefix / "run" / "slurmrestd.pid").write_text(f"{proc.pid}\n")
    return _listening(proc, port)


@contextlib.contextmanager
def other_rest(cluster: Cluster, plugins: str) -> Iterator[str]:
    """Another slurmrestd of the cluster that serves only the API versions of `plugins`
    (`openapi/v0.0.37,openapi/v0.0.36`), as a server of another Slurm release would: its URL.
    Stopped (and reaped) at the end; a ClusterError where it does not listen."""
    port = _free_ports(1)[0]
    proc = _spawn_rest(cluster.prefix, cluster.conf, port, plugins, f"slurmrestd-{port}.log")
    try:
        url = _listening(proc, port)
        if url is None:
            raise ClusterError(f"slurmrestd -s {plugins} did not listen (see {cluster.prefix}/log/slurmrestd-{port}.log)")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _pids(prefix: Path) -> dict[str, int]:
    found = {}
    for name, path in (("munged", prefix / "munge" / "munged.pid"), ("slurmctld", prefix / "run" / "slurmctld.pid"),
                       ("slurmd", prefix / "run" / "slurmd.pid"), ("slurmrestd", prefix / "run" / "slurmrestd.pid")):
        with contextlib.suppress(OSError, ValueError):
            found[name] = int(path.read_text().split()[0])
    return found


def _alive(pid: int, name: str) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0] != "Z" and Path(f"/proc/{pid}/comm").read_text().strip() == name
    except OSError:
        return False


def steps_of(prefix: Path) -> list[int]:
    """Pids of slurmstepd processes of this cluster: their working folder or an open file is under `prefix`."""
    mine = str(prefix) + "/"
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if (d / "comm").read_text().strip() != "slurmstepd":
                continue
            paths = [os.readlink(d / "cwd")] + [os.readlink(f) for f in (d / "fd").iterdir()]
        except OSError:
            continue
        if any((p + "/").startswith(mine) for p in paths):
            pids.append(int(d.name))
    return pids


def running(prefix: Path) -> list[str]:
    """The daemons of this cluster still running, as `name pid`."""
    return [f"{n} {p}" for n, p in _pids(prefix).items() if _alive(p, n)]


def down(prefix: Path, timeout: float = 15.0) -> None:
    """Cancel every job, stop the daemons (TERM, then KILL), and wait until none of them is left."""
    prefix = prefix.resolve()
    conf = prefix / "slurm.conf"
    if conf.exists() and "slurmctld" in " ".join(running(prefix)):
        with contextlib.suppress(subprocess.TimeoutExpired):
            _run(["scancel", "--full", "--user=root"], {"SLURM_CONF": str(conf)}, timeout=10)
        end = time.monotonic() + timeout
        while steps_of(prefix) and time.monotonic() < end:    # let slurmd end the steps it runs
            time.sleep(0.1)
    order = ("slurmrestd", "slurmd", "slurmctld", "munged")
    pids = _pids(prefix)
    for name in order:
        pid = pids.get(name)
        if pid is None or not _alive(pid, name):
            continue
        os.kill(pid, signal.SIGTERM)
        end = time.monotonic() + timeout
        while _alive(pid, name) and time.monotonic() < end:
            time.sleep(0.05)
        if _alive(pid, name):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):    # slurmrestd is our own child: reap it
            os.waitpid(pid, os.WNOHANG)
    for pid in steps_of(prefix):    # steps whose job the daemons no longer watch
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def private(tag: str, *, kill_wait: int = 1, rest: bool = True, gpus: int = 1) -> Iterator[Cluster]:
    """A cluster under a fresh short prefix (munge's socket path must fit in a sockaddr_un, 108 bytes), with
    SLURM_CONF pointing at it while it runs; stopped at the end, and a ClusterError if a daemon or step is
    left running (LeftRunning; the prefix is kept then, to look at)."""
    import tempfile

    prefix = Path(tempfile.mkdtemp(prefix=f"rf-slurm-{tag}-{os.getpid()}-"))
    old = os.environ.get("SLURM_CONF")
    c = up(prefix, kill_wait=kill_wait, rest=rest, gpus=gpus)
    os.environ["SLURM_CONF"] = str(c.conf)
    try:
        yield c
    finally:
        down(prefix)
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old
        left = running(prefix) + [f"slurmstepd {pid}" for pid in steps_of(prefix)]
        if left:
            raise LeftRunning(f"private Slurm under {prefix} left running: {', '.join(left)}")
        shutil.rmtree(prefix, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m redfirst.leases.minislurm")
    ap.add_argument("action", choices=("up", "down", "status"))
    ap.add_argument("prefix", type=Path)
    args = ap.parse_args(argv)
    try:
        if args.action == "up":
            c = up(args.prefix)
            print(f"minislurm: node {c.node} idle; export SLURM_CONF={c.conf}" + (f"; REST {c.rest}" if c.rest else ""))
        elif args.action == "down":
            down(args.prefix)
            left = running(args.prefix)
            if left:
                print(f"minislurm: still running: {', '.join(left)}", file=sys.stderr)
                return 1
        else:
            print("\n".join(running(args.prefix)) or "minislurm: nothing running")
    except ClusterError as exc:
        print(f"minislurm: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
