"""Runs a command with a directory bind-mounted read-only, then unmounts it.

    read_only_mount.py SRC MOUNTPOINT CMD [ARG...]
        mounts SRC at MOUNTPOINT read-only (mount --bind, then
        mount -o remount,bind,ro), runs CMD, unmounts in any case and exits
        with CMD's status
    read_only_mount.py --probe WORKDIR
        exit 0 if such a mount is permitted here, else print why and exit 1
"""
import os
import subprocess
import sys


def mount_read_only(source, mountpoint):
    """Returns "" on success, else why not."""
    for args in (["mount", "--bind", source, mountpoint],
                 ["mount", "-o", "remount,bind,ro", mountpoint]):
        result = subprocess.run(args, capture_output=True, text=True)
        if result.returncode != 0:
            if os.path.ismount(mountpoint):
                subprocess.run(["umount", mountpoint])
            return (result.stderr.strip() or f"{args[0]} failed").splitlines()[-1]
    return ""


def main():
    if sys.argv[1] == "--probe":
        work = sys.argv[2]
        source, mountpoint = os.path.join(work, "src"), os.path.join(work, "ro")
        os.makedirs(source, exist_ok=True)
        os.makedirs(mountpoint, exist_ok=True)
        why = mount_read_only(source, mountpoint)
        if not why:
            writable = os.access(mountpoint, os.W_OK)
            subprocess.run(["umount", mountpoint])
            if writable:
                why = "the read-only bind mount stayed writable"
        if why:
            print(why)
        return 1 if why else 0
    source, mountpoint, command = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(mountpoint, exist_ok=True)
    why = mount_read_only(source, mountpoint)
    if why:
        sys.exit(f"read_only_mount.py: cannot mount {source} read-only: {why}")
    try:
        return subprocess.run(command).returncode
    finally:
        subprocess.run(["umount", mountpoint])


if __name__ == "__main__":
    sys.exit(main())
