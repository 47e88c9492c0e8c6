"""One compile cache seen through two sshfs mounts of one directory.

    sshfs_cache.py WORKDIR          run the test (needs root, sshd, sshfs, FUSE)
    sshfs_cache.py --probe WORKDIR  exit 0 if an sshfs mount works here

Starts its own sshd on 127.0.0.1 (generated host and client keys, a free
non-default port), mounts WORKDIR/shared twice with sshfs (attribute and
directory caching on, the default), and runs 8 concurrent `trn-cc compile`
processes over 12 small graphs, alternating between the two mounts as
--cache-dir. FUSE gives one file another inode number under another name
(a lock file and the temporary it was linked from), so this is where lock
ownership decided by inode left every lock behind. Prints a summary for
FileCheck; sshfs is unmounted and sshd stopped (by its pid) in any case.
"""
import glob
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time

GRAPHS = 12
WORKERS = 8


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, timeout=60, **kwargs)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unmount(path):
    fusermount = shutil.which("fusermount3") or shutil.which("fusermount")
    if os.path.ismount(path):
        run([fusermount, "-u", path])


def probe(work):
    """Says why this test cannot run here, or "" if it can: it needs root
    (sshd logs in as root), sshd, ssh-keygen, sshfs, and a FUSE mount that
    works, tried with sshfs in passive mode (SFTP over pipes, no ssh)."""
    server = "/usr/lib/openssh/sftp-server"
    needs = [(os.geteuid() == 0, "not running as root"),
             (os.path.exists("/dev/fuse"), "no /dev/fuse"),
             (shutil.which("sshfs"), "no sshfs (apt-get install sshfs)"),
             (shutil.which("fusermount3") or shutil.which("fusermount"), "no fusermount"),
             (os.path.exists("/usr/sbin/sshd") and os.path.exists(server),
              "no sshd (apt-get install openssh-server)"),
             (shutil.which("ssh-keygen"), "no ssh-keygen")]
    for ok, why in needs:
        if not ok:
            return why
    source, mount = os.path.join(work, "src"), os.path.join(work, "mnt")
    os.makedirs(source, exist_ok=True)
    os.makedirs(mount, exist_ok=True)
    to_server_r, to_server_w = os.pipe()
    to_sshfs_r, to_sshfs_w = os.pipe()
    sftp = subprocess.Popen([server], stdin=to_server_r, stdout=to_sshfs_w,
                            stderr=subprocess.DEVNULL)
    # -f: in passive mode a daemonised sshfs would not report the mount.
    sshfs = subprocess.Popen(["sshfs", "-f", "-o", "passive", ":" + source, mount],
                             stdin=to_sshfs_r, stdout=to_server_w,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 10
        while not os.path.ismount(mount) and sshfs.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        mounted = os.path.ismount(mount)
    finally:
        unmount(mount)
        for process in (sshfs, sftp):
            process.kill()
        errors = sshfs.communicate()[1].strip().splitlines()
        sftp.wait()
        for fd in (to_server_r, to_server_w, to_sshfs_r, to_sshfs_w):
            os.close(fd)
    if mounted:
        return ""
    return "a FUSE mount failed here" + (f" ({errors[-1]})" if errors else "")


def start_sshd(work):
    """sshd as root on 127.0.0.1, accepting only the generated client key."""
    for name in ("host_key", "client_key"):
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
             os.path.join(work, name)], check=True)
    shutil.copy(os.path.join(work, "client_key.pub"), os.path.join(work, "authorized_keys"))
    port = free_port()
    config = os.path.join(work, "sshd_config")
    with open(config, "w") as f:
        f.write(f"""Port {port}
ListenAddress 127.0.0.1
HostKey {work}/host_key
PidFile {work}/sshd.pid
AuthorizedKeysFile {work}/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
LogLevel ERROR
""")
    # sshd refuses to start without its privilege separation directory.
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    sshd = subprocess.Popen(["/usr/sbin/sshd", "-D", "-f", config, "-E",
                             os.path.join(work, "sshd.log")])
    deadline = time.time() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return sshd, port
        except OSError:
            if sshd.poll() is not None or time.time() > deadline:
                sys.exit("sshd did not start: " + open(os.path.join(work, "sshd.log")).read())
            time.sleep(0.05)


def mount(work, port, mountpoint):
    os.makedirs(mountpoint, exist_ok=True)
    result = run(["sshfs", f"root@127.0.0.1:{work}/shared", mountpoint, "-p", str(port),
                  "-o", f"IdentityFile={work}/client_key", "-o", "StrictHostKeyChecking=no",
                  "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes",
                  "-o", "LogLevel=ERROR", "-o", "dir_cache=yes"])
    if result.returncode != 0 or not os.path.ismount(mountpoint):
        sys.exit(f"sshfs could not mount {mountpoint}: {result.stderr.strip()}")


def make_graphs(work):
    """12 variants of Inputs/add_exp.mlir that differ in shape."""
    template = open(os.path.join(os.path.dirname(__file__), "add_exp.mlir")).read()
    paths = []
    for i in range(GRAPHS):
        path = os.path.join(work, "graphs", f"g{i}.mlir")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(template.replace("256x64", f"128x{8 * (i + 1)}"))
        paths.append(path)
    return paths


def compile_all(work, graphs, caches):
    """8 workers, each compiling every graph (each from another one), the
    even ones through the first mount and the odd ones through the second."""
    outputs, lock = [], threading.Lock()

    def worker(w):
        for j in range(GRAPHS):
            g = (w * 5 + j) % GRAPHS
            out = os.path.join(work, "out", f"w{w}-g{g}.trnart")
            result = run(["trn-cc", "compile", graphs[g], "-o", out,
                          "--cache-dir", caches[w % 2]])
            with lock:
                outputs.append((w, g, result))

    os.makedirs(os.path.join(work, "out"), exist_ok=True)
    threads = [threading.Thread(target=worker, args=(w,)) for w in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outputs


def lock_files(work):
    """Lock files in the directory itself, not through FUSE."""
    return glob.glob(os.path.join(work, "shared", "cache", "trncc-*", "locks", "*"))


def stale_locks(work, caches):
    """Holders killed by SIGKILL through the first mount leave their locks;
    through the second mount a compile of one key takes its lock over at
    once (its owner is gone on this host); clear-locks removes the other.
    (Listings go through the first mount: sshfs serves a directory listing
    from its cache for up to 20 s unless this mount changed the directory.)"""
    for graph in ("held-1", "held-2"):
        before = len(lock_files(work))
        holder = subprocess.Popen(["trn-cache-fixture", caches[0], "hold", graph, "30"],
                                  stdout=subprocess.DEVNULL)
        deadline = time.time() + 10
        while len(lock_files(work)) == before and time.time() < deadline:
            time.sleep(0.02)
        holder.kill()
        holder.wait()
    stats = run(["trn-cache", "stats", "--cache-dir", caches[0]]).stdout
    print("after kill -9: " + [l for l in stats.splitlines() if l.startswith("locks:")][0])
    takeover = run(["trn-cache-fixture", caches[1], "hold", "held-1", "0"])
    print(f"took over through the other mount: {takeover.returncode == 0}, "
          f"warnings: {takeover.stderr.count('took over the stale lock')}")
    clear = run(["trn-cache", "clear-locks", "--cache-dir", caches[0]]).stdout
    print("clear-locks: " + clear.strip().splitlines()[-1])


def main(work):
    work = os.path.abspath(work)
    os.makedirs(os.path.join(work, "shared"), exist_ok=True)
    mounts = [os.path.join(work, "m1"), os.path.join(work, "m2")]
    sshd, port = start_sshd(work)
    try:
        for m in mounts:
            mount(work, port, m)
        caches = [os.path.join(m, "cache") for m in mounts]
        graphs = make_graphs(work)
        start = time.time()
        outputs = compile_all(work, graphs, caches)
        elapsed = time.time() - start

        compiled, hits, failures, warnings = {}, 0, [], []
        key_of = {}
        for w, g, result in outputs:
            if result.returncode != 0:
                failures.append(f"worker {w} graph {g}: {result.stderr.strip()}")
            for line in result.stdout.splitlines():
                found = re.match(r"trn-cc: (compiled|cache hit) (MODULE_\S+)", line)
                if not found:
                    continue
                key_of.setdefault(g, set()).add(found.group(2))
                if found.group(1) == "compiled":
                    compiled[g] = compiled.get(g, 0) + 1
                else:
                    hits += 1
            # Waiting more than a second for another's compile is said, and
            # is no fault on a loaded machine.
            warnings += [l for l in result.stderr.splitlines()
                         if "warning" in l and "waiting for" not in l]
        print(f"requests: {len(outputs)}, failed: {len(failures)}")
        for failure in failures[:3]:
            print("  " + failure)
        print(f"graphs compiled: {len(compiled)}, each exactly once: "
              f"{sorted(set(compiled.values())) == [1] and len(compiled) == GRAPHS}")
        print(f"cache hits: {hits}")
        print(f"one key per graph: {all(len(k) == 1 for k in key_of.values())}")
        identical = all(
            len({open(p, 'rb').read() for p in glob.glob(os.path.join(work, "out", f"w*-g{g}.trnart"))}) == 1
            for g in range(GRAPHS))
        print(f"artifacts identical per graph: {identical}")
        print(f"warnings: {len(warnings)}")
        for warning in warnings[:5]:
            print("  " + warning)
        for cache in caches:
            stats = run(["trn-cache", "stats", "--cache-dir", cache]).stdout
            for line in stats.splitlines():
                if line.startswith(("entries:", "locks:")):
                    print(f"{os.path.basename(os.path.dirname(cache))} {line}")
        # The directory itself, not through FUSE: nothing left behind.
        temporaries = glob.glob(os.path.join(work, "shared", "cache", "trncc-*", "tmp", "*"))
        print(f"lock files left: {len(lock_files(work))}, temporaries left: {len(temporaries)}")
        print(f"compiles took under 20 s: {elapsed < 20}")
        stale_locks(work, caches)
        print(f"lock files left: {len(lock_files(work))}")
    finally:
        for m in mounts:
            unmount(m)
        sshd.terminate()
        sshd.wait()
    print(f"unmounted: {not any(os.path.ismount(m) for m in mounts)}, sshd stopped: {sshd.poll() is not None}")


if __name__ == "__main__":
    if sys.argv[1] == "--probe":
        reason = probe(sys.argv[2])
        if reason:
            print(reason)
        sys.exit(1 if reason else 0)
    main(sys.argv[1])
