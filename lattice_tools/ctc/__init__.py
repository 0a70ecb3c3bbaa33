"""CTC decoding graphs and lattice decoding of CTC log-probabilities (see ``docs/k2-and-ctc.md``).

:func:`build_graph` (H∘L∘G with kaldifst, or with k2), :func:`decode_ctc` (Kaldi
``LatticeSimpleDecoder`` or k2 ``intersect_dense_pruned``) and :func:`read_logprobs`.
Imported lazily so that ``import lattice_tools.ctc`` loads neither kaldifst nor torch.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..core._exports import lazy_exports

if TYPE_CHECKING:
    from .decode import decode_ctc, iter_decode_ctc, load_graph
    from .graph import build_graph, prepare_lang
    from .logprobs import iter_logprobs, read_logprobs

_LAZY = {"build_graph": "graph", "prepare_lang": "graph", "decode_ctc": "decode", "iter_decode_ctc": "decode",
         "load_graph": "decode", "read_logprobs": "logprobs", "iter_logprobs": "logprobs"}

__all__ = ["build_graph", "prepare_lang", "decode_ctc", "iter_decode_ctc", "load_graph", "read_logprobs",
           "iter_logprobs"]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
