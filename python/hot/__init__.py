"""hot: Python bindings of libhot (HOT: Hadamard-based Optimized Training).

- hot.Context, hot.Layer, hot.LayerSpec: a thin object API over the C API (runtime/include/hot.h);
  errors are raised as hot.HotError carrying hot's status and one-line message.
- hot.cpu_use_openmp(runtime) / hot.cpu_openmp(): the CPU backend on an OpenMP runtime's workers
  (GNU OpenMP when the process has it loaded, the default) or on hot's own threads
  (HOT_CPU_OPENMP=off);
  hot.cpu_regions() counts its parallel regions, hot.cpu_openmp_fallbacks() its fall-backs from
  the OpenMP runtime to its own threads (CPUs shared with other processes);
  Context.set_cpu_threads(n) / .cpu_threads its threads (hot.torch follows
  torch.get_num_threads() unless HOT_CPU_THREADS is set).
- hot.capture(path, layer_name, x, w, g_y) writes a layer capture (x, w, g_y of one backward;
  docs/capture.md), hot.read_capture(path) reads one back.
- hot.torch (imported on demand: `import hot.torch`): HOTLinear, a drop-in for torch.nn.Linear
  whose backward runs hot, and convert(model) that swaps a model's nn.Linear modules.

libhot.so is found through $HOT_LIBRARY, the package folder, ctypes.util.find_library("hot"),
then /usr/local/lib (see hot._lib); it is loaded on first use.
"""

from ._lib import (Backend, DType, Gran, HotLibraryError, Layout, Recipe, Round, Rule, Selection,
                   Status, library_path)
from ._capture import Capture, capture, read_capture
from .api import (LAYER_ID_LIMIT, Context, HotError, KernelTime, Layer, LayerInfo, LayerSpec,
                  Stats, cpu_openmp, cpu_openmp_fallbacks, cpu_regions, cpu_use_openmp,
                  layer_id_for, status_name, stream_hash, stream_key)

__version__ = "0.1.0"

__all__ = ["Context", "Layer", "LayerSpec", "LayerInfo", "Stats", "KernelTime", "HotError",
           "HotLibraryError", "Status", "Backend", "DType", "Recipe", "Gran", "Round", "Rule",
           "Selection", "Layout", "status_name", "library_path", "capture", "read_capture",
           "Capture", "layer_id_for", "stream_hash", "stream_key", "LAYER_ID_LIMIT",
           "cpu_use_openmp", "cpu_openmp", "cpu_regions",
           "cpu_openmp_fallbacks"]
