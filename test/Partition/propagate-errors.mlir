// RUN: trn-opt %s -dist-propagate -verify-diagnostics

dist.mesh @a <tp = 2>
// expected-error @+1 {{dist-propagate handles one mesh per module; this one is the second}}
dist.mesh @b <tp = 4>
