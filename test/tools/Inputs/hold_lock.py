"""Starts trn-cache-fixture holding a key's lock, then exercises clear-locks.

`kill`: kill -9 the holder once its lock exists (leaving a stale lock).
`live`: check that clear-locks keeps the live lock and --all removes it.
"""
import glob
import os
import signal
import subprocess
import sys
import time

root, mode = sys.argv[1], sys.argv[2]
holder = subprocess.Popen(["trn-cache-fixture", root, "hold", "graph-held", "30"],
                          stdout=subprocess.DEVNULL)
deadline = time.time() + 20
while not glob.glob(os.path.join(root, "trncc-*", "locks", "*")):
    if time.time() > deadline or holder.poll() is not None:
        holder.kill()
        sys.exit("the holder never took its lock")
    time.sleep(0.05)
if mode == "kill":
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    print(f"lock held by pid {holder.pid}, now killed")
    sys.exit(0)
try:
    listing = subprocess.run(["trn-cache", "list", "--locked", "--cache-dir", root],
                             capture_output=True, text=True, check=True).stdout
    assert "compiling*" in listing, listing
    stats = subprocess.run(["trn-cache", "stats", "--cache-dir", root],
                           capture_output=True, text=True, check=True).stdout
    held = [l for l in stats.splitlines() if l.startswith("locks:")][0].split()[1]
    clear = subprocess.run(["trn-cache", "clear-locks", "--cache-dir", root],
                           capture_output=True, text=True, check=True).stdout
    assert "removed 0 locks" in clear, clear
    forced = subprocess.run(["trn-cache", "clear-locks", "--all", "--cache-dir", root],
                            capture_output=True, text=True, check=True)
    removed = forced.stdout.strip().splitlines()[-1].split()[1]
    warning = forced.stderr.strip().split("warning: ")[-1].split(";")[0]
    print(f"kept: {held} held, cleared with --all: {removed}, warning: {warning}")
finally:
    holder.kill()
    holder.wait()
