"""Errors raised by the trn frontend. Each message is one line that names the
problem and what to do about it."""


class TrnError(Exception):
    """Base class of every error trn raises on purpose."""


class UnsupportedOpError(TrnError):
    """The step uses something trn cannot translate: an aten op outside the
    supported set, a data-dependent shape, Python control flow on a tensor
    value. The message names the op, its input shapes and the user's line."""


_EAGER_KINDS: dict = {}


def eager_error(kind: type, message: str) -> UnsupportedOpError:
    """What the user's step raised while it was traced (a dtype or shape check
    of PyTorch's, say), raised as eager PyTorch raises it: an
    UnsupportedOpError that is also a `kind` (RuntimeError, TypeError,
    ValueError, IndexError), so `except RuntimeError` catches it as it would
    in eager mode. The message carries the user's line."""
    cls = _EAGER_KINDS.get(kind)
    if cls is None:
        cls = type(kind.__name__, (UnsupportedOpError, kind),
                   {"__module__": __name__,
                    "__doc__": f"A {kind.__name__} the traced step raised."})
        _EAGER_KINDS[kind] = cls
    return cls(message)


class CompileError(TrnError):
    """The compiler rejected the graph (the message is its diagnostic)."""


class DeviceError(TrnError):
    """The simulated NeuronCore could not load or run a compiled step."""


class ExtractionStop(SystemExit):
    """Raised in extraction mode after the last step to extract: ends the
    training script with exit status 0 (a SystemExit, so `except Exception`
    in the script does not swallow it)."""
