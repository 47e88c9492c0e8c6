"""A private single-host Slurm cluster for tests: its own munged (own socket
and key), slurmctld and slurmd with a generated slurm.conf, all in a temp
directory, started as root and stopped by their PIDs. Nothing outside the
directory is touched; a system munged or Slurm keeps running untouched.

    with SlurmCluster(tmp_path) as cluster:      # or pytest.skip(cluster.why)
        cluster.run(["srun", "-n", "4", "hostname"])
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional


class SlurmUnavailable(Exception):
    """The daemons cannot run on this machine; the message says why."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SlurmCluster:
    def __init__(self, directory: Path, cpus: int = 8) -> None:
        self.dir = Path(directory) / "slurm"
        self.cpus = cpus
        self.pids: Dict[str, int] = {}
        self.munge_dir: Optional[Path] = None
        self.env: Dict[str, str] = {}

    # -- setup ---------------------------------------------------------------

    def __enter__(self) -> "SlurmCluster":
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _need(self, *programs: str) -> None:
        missing = [p for p in programs if shutil.which(p) is None]
        if missing:
            raise SlurmUnavailable(f"not installed: {', '.join(missing)} "
                                   "(utils/setup.sh installs them)")
        if os.geteuid() != 0:
            raise SlurmUnavailable("the test starts slurmd, which needs root")

    def _start(self) -> None:
        self._need("munged", "slurmctld", "slurmd", "srun", "sinfo")
        d = self.dir
        for sub in ("state", "spool", "log", "run"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        # munged runs as the munge user and refuses keys or directories
        # others can write: its own directory, reachable by that user (a
        # test's tmp_path is private to root).
        self.munge_dir = Path(tempfile.mkdtemp(prefix="trn-munge-", dir="/tmp"))
        self.munge_dir.chmod(0o711)
        m = self.munge_dir / "m"
        m.mkdir()
        m.chmod(0o711)  # the socket must be reachable by clients
        key = m / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        for path in (m, key):
            shutil.chown(path, "munge", "munge")
        sock = m / "munge.socket"
        munge = subprocess.run(
            ["su", "-s", "/bin/sh", "munge", "-c",
             f"munged --socket={sock} --key-file={key} --pid-file={m}/munged.pid "
             f"--log-file={m}/munged.log --seed-file={m}/munged.seed"],
            capture_output=True, text=True)
        if munge.returncode != 0:
            raise SlurmUnavailable(f"munged did not start: {munge.stderr.strip()}")
        self.pids["munged"] = self._pid(m / "munged.pid")

        host = socket.gethostname()
        conf = d / "slurm.conf"
        conf.write_text(f"""ClusterName=trntest
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/run/slurmctld.pid
SlurmdPidFile={d}/run/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
SlurmdParameters=config_overrides
NodeName={host} CPUs={self.cpus} RealMemory=20000 State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES State=UP OverSubscribe=YES MaxTime=INFINITE
""")
        self.env = {"SLURM_CONF": str(conf)}
        for daemon in ("slurmctld", "slurmd"):
            proc = subprocess.run([daemon, "-f", str(conf)], capture_output=True,
                                  text=True, env=self._environ())
            if proc.returncode != 0:
                raise SlurmUnavailable(f"{daemon} did not start: "
                                       f"{(proc.stderr or proc.stdout).strip()}")
            self.pids[daemon] = self._pid(d / "run" / f"{daemon}.pid")
        deadline = time.time() + 30
        state = ""
        while time.time() < deadline:
            state = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True,
                                   text=True, env=self._environ()).stdout.strip()
            if state in ("idle", "mixed", "allocated"):
                return
            time.sleep(0.5)
        log = (d / "log" / "slurmd.log").read_text()[-800:] if (d / "log" / "slurmd.log").exists() else ""
        raise SlurmUnavailable(f"the node did not become idle (sinfo: {state!r}); "
                               f"slurmd.log ends: {log}")

    @staticmethod
    def _pid(path: Path, timeout: float = 10) -> int:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if path.exists() and path.read_text().strip():
                return int(path.read_text().split()[0])
            time.sleep(0.1)
        raise SlurmUnavailable(f"no pid file {path}")

    def _environ(self, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
        env = dict(os.environ)
        # Variables of an enclosing Slurm job would confuse the inner one.
        for name in list(env):
            if name.startswith("SLURM_"):
                del env[name]
        env.update(self.env)
        env.update(extra or {})
        return env

    # -- use -----------------------------------------------------------------

    def run(self, args: List[str], env: Optional[Dict[str, str]] = None,
            timeout: int = 600) -> subprocess.CompletedProcess:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                              env=self._environ(env))

    def stop(self) -> None:
        for name in ("slurmd", "slurmctld", "munged"):
            pid = self.pids.pop(name, None)
            if pid is None:
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            deadline = time.time() + 10
            while time.time() < deadline:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
            else:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if self.munge_dir is not None:
            shutil.rmtree(self.munge_dir, ignore_errors=True)
            self.munge_dir = None
