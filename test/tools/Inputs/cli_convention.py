"""Runs every trn tool through the command-line convention of docs/cli.md
("Conventions") and prints one line per tool; exits 1 naming each breach.

For each tool: -h and --help print its usage on stdout (exit 0); --version
prints "TOOL VERSION" first and the LLVM it was built with (exit 0); an
unknown option, a misspelled one, a missing value, a value given to a switch
and a bad value are each one line "TOOL: error: ..." on stderr, nothing on
stdout, exit status 2; --opt=value and --opt value are the same.
"""

import subprocess
import sys
from pathlib import Path

BIN = Path(sys.argv[1])

# tool: (usage's first words, [leading args], misspelled option and the one
#        it means, an option needing a value, a switch, (option, bad value,
#        what the error says it is not))
TOOLS = {
    "trn-cc": ("usage: trn-cc", ["compile", "g.mlir"], ("--anlyze", "--analyze"),
               "--report", "--no-cache", ("--lock-timeout", "soon", "a duration")),
    "trn-run": ("usage: trn-run", ["a.trnart"], ("--iteratons", "--iterations"),
                "--inputs", "--zeros", ("--iterations", "0", "an integer >= 1")),
    "trn-eval": ("usage: trn-eval", ["g.mlir"], ("--outputz", "--outputs"),
                 "--inputs", "--zeros", ("--int-max", "0", "an integer >= 1")),
    "trn-cache": ("usage: trn-cache", ["list"], ("--jsno", "--json"),
                  "--cache-dir", "--json", ("--max-size", "lots", "a size")),
    "trn-parallel-compile": ("usage: trn-parallel-compile", [],
                             ("--num-paralel", "--num-parallel"), "--workdir",
                             "--quiet", ("--retries", "x", "a non-negative integer")),
    # MLIR's drivers: LLVM's options and help, trn's errors and exit status.
    "trn-opt": ("OVERVIEW: trn optimizer driver", [], ("--canonicalise", "--canonicalize"),
                None, None, None),
    "trn-translate": ("OVERVIEW: trn translation driver", [], ("--nc-to-artifcat", "--nc-to-artifact"),
                      None, None, None),
}

breaches = []


def run(tool: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / tool), *args], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


def expect(tool: str, what: str, ok: bool, proc: subprocess.CompletedProcess) -> None:
    if not ok:
        breaches.append(f"{tool}: {what}: exit {proc.returncode}, stdout {proc.stdout[:200]!r}, "
                        f"stderr {proc.stderr[:300]!r}")


def usage_error(tool: str, what: str, args: list, message: str) -> str:
    """A bad command line: one line on stderr, starting with `message`."""
    proc = run(tool, *args)
    lines = proc.stderr.splitlines()
    expect(tool, what, proc.returncode == 2 and proc.stdout == "" and len(lines) == 1
           and lines[0].startswith(f"{tool}: error: {message}"), proc)
    return lines[0] if lines else ""


for tool, (usage, lead, (typo, meant), valued, switch, bad) in TOOLS.items():
    for flag in ("-h", "--help"):
        proc = run(tool, flag)
        expect(tool, flag, proc.returncode == 0 and proc.stdout.startswith(usage)
               and proc.stderr == "", proc)
    proc = run(tool, "--version")
    expect(tool, "--version", proc.returncode == 0 and
           proc.stdout.splitlines()[0].split()[0] == tool and "LLVM" in proc.stdout, proc)
    usage_error(tool, "unknown option", lead + ["--frobnicate"],
                f"unknown option '--frobnicate' (see {tool} --help)")
    usage_error(tool, "misspelled option", lead + [typo],
                f"unknown option '{typo}'; did you mean '{meant}'?")
    if valued:
        usage_error(tool, "missing value", lead + [valued], f"option '{valued}' needs a value")
    if switch:
        usage_error(tool, "switch with a value", lead + [f"{switch}=1"],
                    f"option '{switch}' takes no value")
    if bad:
        option, value, kind = bad
        spaced = usage_error(tool, "bad value", lead + [option, value],
                             f"option '{option}': '{value}' is not {kind}")
        joined = usage_error(tool, "bad value with =", lead + [f"{option}={value}"],
                             f"option '{option}': '{value}' is not {kind}")
        if spaced != joined:
            breaches.append(f"{tool}: '{option} {value}' and '{option}={value}' differ: "
                            f"{spaced!r} vs {joined!r}")
    print(f"{tool}: checked")

for breach in breaches:
    print("BREACH " + breach)
sys.exit(1 if breaches else 0)
