"""Stream capture in thread-local mode, instantiation and replay, through cuda.bindings.runtime.

Thread-local mode: while this thread captures, any potentially unsafe call it makes
(a synchronising call, a legacy-stream launch) fails the capture instead of running,
and other threads are not affected. Capture can end and begin again on the same stream
with eager work between (the re-begin of piecewise capture; `gates probe rebegin`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from redfirst.gates.cuda import rt


class CaptureError(RuntimeError):
    """The work could not be captured, or the captured graph could not be instantiated."""


class Graph:
    """An instantiated graph, launched on a stream."""

    def __init__(self, graph: Any, nodes: int) -> None:
        b = rt.bindings()
        self.graph = graph
        self.nodes = nodes
        try:
            self.exec = rt.ok(b.runtime.cudaGraphInstantiate(graph, 0), "cudaGraphInstantiate")
        except rt.CudaError as exc:
            raise CaptureError(str(exc)) from exc

    def launch(self, stream: int) -> None:
        b = rt.bindings()
        rt.ok(b.runtime.cudaGraphLaunch(self.exec, b.runtime.cudaStream_t(int(stream))), "cudaGraphLaunch")

    def destroy(self) -> None:
        b = rt.bindings()
        b.runtime.cudaGraphExecDestroy(self.exec)
        b.runtime.cudaGraphDestroy(self.graph)


def begin(stream: int) -> None:
    b = rt.bindings()
    mode = b.runtime.cudaStreamCaptureMode.cudaStreamCaptureModeThreadLocal
    try:
        rt.ok(b.runtime.cudaStreamBeginCapture(b.runtime.cudaStream_t(int(stream)), mode), "cudaStreamBeginCapture")
    except rt.CudaError as exc:
        raise CaptureError(str(exc)) from exc


def end(stream: int) -> Any:
    """End the capture; the captured (not yet instantiated) graph. CaptureError when it was
    invalidated by an operation that is illegal during capture."""
    b = rt.bindings()
    status, graph = b.runtime.cudaStreamEndCapture(b.runtime.cudaStream_t(int(stream)))
    if int(status) != 0 or graph is None or int(graph) == 0:
        b.runtime.cudaGetLastError()  # clear the sticky-free error so later calls report their own
        raise CaptureError(f"cudaStreamEndCapture failed: {rt.error_name(status)} (capture invalidated)")
    return graph


def node_count(graph: Any) -> int:
    b = rt.bindings()
    _, nodes, count = b.runtime.cudaGraphGetNodes(graph, 0)
    return int(count)


def capturing(stream: int) -> bool:
    b = rt.bindings()
    status, state, *_ = b.runtime.cudaStreamGetCaptureInfo(b.runtime.cudaStream_t(int(stream)))
    return int(status) == 0 and int(state) == int(b.runtime.cudaStreamCaptureStatus.cudaStreamCaptureStatusActive)


def capture(stream: int, work: Callable[[int], None]) -> Graph:
    """Capture `work(stream)` in thread-local mode and instantiate it.

    When `work` raises (a CUDA call refused during capture, say), the capture is ended
    and discarded, and CaptureError carries the cause.
    """
    begin(stream)
    try:
        work(stream)
    except BaseException as exc:
        try:
            end(stream)
        except CaptureError:
            pass
        raise CaptureError(f"work failed during capture: {type(exc).__name__}: {exc}") from exc
    graph = end(stream)
    return Graph(graph, node_count(graph))
