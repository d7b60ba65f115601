"""The exceptions quantc raises. Every message is the one the ``quantc`` CLI prints after
``error:`` for the same mistake: it names the offending value and how to fix it.

Hierarchy::

    Error                      every quantc failure
    ├── SpecError (ValueError)  a malformed spec: unknown op or key, a value of the wrong type
    ├── OpError (ValueError)    parameters the op constructor refuses (k not a multiple of 8, ...)
    ├── CompileError            the pass pipeline, the PTX emitter, ptxas or nvJitLink failed
    ├── RunError                an array that does not fit its buffer, a failed run or launch
    │   └── BackendUnavailable  no CUDA driver or device (the CPU backends still work)
    ├── PackError (ValueError)  a weight the packing scheme cannot quantize
    └── ConvertError            a checkpoint layer that cannot be converted
"""


class Error(Exception):
    """Base class of every quantc exception."""


class SpecError(Error, ValueError):
    """The spec is malformed (C++ ``ir::ops::SpecError``)."""


class OpError(Error, ValueError):
    """The op refuses its parameters (C++ ``ir::ops::OpError``)."""


class CompileError(Error):
    """Compilation failed: IR verification, a pass, ptxas or nvJitLink."""


class RunError(Error):
    """A run or launch was refused or failed (C++ ``runtime::RuntimeError``)."""


class BackendUnavailable(RunError):
    """The backend cannot run on this machine (no CUDA driver or device)."""


class PackError(Error, ValueError):
    """The weight cannot be packed with the scheme (C++ ``ir::ops::pack::PackError``)."""


class ConvertError(Error):
    """The checkpoint layer cannot be converted (C++ ``runtime::convert::ConvertError``)."""
