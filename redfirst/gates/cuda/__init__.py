"""CUDA evidence: device identity, the NVRTC bit-exact comparator, stream capture and probes.

Import-light on purpose: nothing here imports cuda-python at module import, so the
CPU side (grading, regrading exported GPU records) runs where cuda-python is absent.
Anything that needs a device raises `redfirst.gates.cuda.rt.Unavailable` with a reason, which
callers turn into NO_DECISION ("cannot produce capture evidence").
"""
