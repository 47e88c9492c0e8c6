"""Runs each argument as a command line (split like a shell would) and
prints, per command, `exit N: <stderr>`; a command that printed more than
one line of stderr, or anything on stdout, is flagged."""
import shlex
import subprocess
import sys

for command in sys.argv[1:]:
    result = subprocess.run(shlex.split(command), capture_output=True, text=True)
    lines = result.stderr.strip().splitlines()
    print(f"exit {result.returncode}: " + " | ".join(lines))
    if len(lines) > 1:
        print(f"  more than one line of errors from: {command}")
    if result.stdout:
        print(f"  stdout from: {command}: {result.stdout.strip()}")
