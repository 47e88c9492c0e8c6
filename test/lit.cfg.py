# -*- Python -*-
# lit configuration for trn: tools from build/bin, FileCheck and friends from
# Debian's LLVM 19, and %trn_python for the project's Python (.venv: torch, numpy).
# (Not %python: lit defines that as its own interpreter, which may lack numpy,
# and its definition would shadow ours under `ninja check-trn`.)

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "TRN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".py"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs", "unit", "fixtures",
                   "python"]  # test/python is the pytest suite (utils/test.sh)
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.trn_obj_root, "test")

config.environment["FILECHECK_OPTS"] = "--enable-var-scope"
# trn-cc verifies the lowered nc kernel too (off by default: its checks are
# repeated on the exported program, and verifying millions of ops is slow).
config.environment["TRN_VERIFY_IR"] = "1"
llvm_config.with_system_environment(["HOME", "TMPDIR"])
llvm_config.use_default_substitutions()

# Fail the whole run with one clear line rather than dozens of import errors.
import subprocess
if subprocess.run([config.trn_python, "-c", "import numpy, torch"],
                  capture_output=True).returncode != 0:
    lit_config.fatal(f"{config.trn_python} cannot import numpy and torch; "
                     "run utils/setup.sh (it makes the project's environment .venv) "
                     "or configure with -DTRN_PYTHON=<interpreter>")
config.substitutions.append(("%trn_python", config.trn_python))
config.substitutions.append(("%trn_src_root", config.trn_src_root))
config.substitutions.append(("%trn_obj_root", config.trn_obj_root))
config.substitutions.append(("%trn_bin", config.trn_tools_dir))

tool_dirs = [config.trn_tools_dir, config.llvm_tools_dir]
tools = ["trn-opt"]
for name in ["trn-eval", "trn-cc", "trn-cache", "trn-cache-fixture",
             "trn-artifact-seeds", "trn-artifact-fuzzer"]:
    if os.path.exists(os.path.join(config.trn_tools_dir, name)):
        tools.append(name)
# Built only when a clang with -fsanitize=fuzzer is available (test/fuzz).
if os.path.exists(os.path.join(config.trn_tools_dir, "trn-artifact-fuzzer")):
    config.available_features.add("artifact-fuzzer")
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.trn_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# Tests that mount filesystems run only where that works, and lit says why not
# elsewhere: tools/trn-cache-sshfs.test mounts one cache twice with sshfs
# through its own sshd (root, sshd, sshfs, a permitted FUSE mount);
# tools/trn-cache-read-only-mount.test bind-mounts a cache read-only.
import tempfile
def probe_feature(feature, test, script):
    with tempfile.TemporaryDirectory(prefix="trn-probe-") as probe_dir:
        probe = subprocess.run([config.trn_python,
                                os.path.join(config.test_source_root, "tools", "Inputs", script),
                                "--probe", probe_dir], capture_output=True, text=True, timeout=60)
    if probe.returncode == 0:
        config.available_features.add(feature)
    else:
        lit_config.note(f"{test} is unsupported here: " +
                        (probe.stdout.strip() or probe.stderr.strip() or "the probe failed"))
probe_feature("sshfs", "tools/trn-cache-sshfs.test", "sshfs_cache.py")
probe_feature("read-only-bind-mount", "tools/trn-cache-read-only-mount.test", "read_only_mount.py")
