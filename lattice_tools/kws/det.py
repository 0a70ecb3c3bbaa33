"""DET curve of a keyword-search system: keyword-averaged P_miss against P_FA over all thresholds (the
sweep MTWV is taken from), on normal-deviate axes like F4DE's, with the actual-decision and MTWV points."""
from __future__ import annotations

from statistics import NormalDist

from ..core.errors import LatticeToolsError
from ..core.files import atomic_write
from .score import KwsScore

_ND = NormalDist()


def _dev(p: float) -> float:
    return _ND.inv_cdf(min(max(p, 1e-6), 1 - 1e-6))


def plot_det(scores: dict[str, KwsScore] | KwsScore, path: str, *, title: str = "") -> None:
    """Write the DET curve(s) as a PNG (written to a temporary file, then renamed)."""
    from ..core._optional import pyplot

    plt = pyplot()

    if isinstance(scores, KwsScore):
        scores = {scores.title: scores}
    if not any(s.det_points for s in scores.values()):
        raise LatticeToolsError("no DET curve to draw: the system output has no scored hit")
    fig, ax = plt.subplots(figsize=(6, 6))
    ticks = [0.0001, 0.001, 0.01, 0.05, 0.2, 0.5, 0.8, 0.95, 0.99]
    for name, s in scores.items():
        if not s.det_points:
            continue
        xs = [_dev(p[2]) for p in s.det_points]
        ys = [_dev(p[1]) for p in s.det_points]
        ax.plot(xs, ys, label=f"{name} (MTWV {s.mtwv.twv:.4f})" if s.mtwv.twv is not None else name)
        if s.atwv.p_fa is not None and s.atwv.p_miss is not None:
            ax.plot(_dev(s.atwv.p_fa), _dev(s.atwv.p_miss), "o", label=f"actual (ATWV {s.atwv.twv:.4f})")
        if s.mtwv.p_fa is not None and s.mtwv.p_miss is not None:
            ax.plot(_dev(s.mtwv.p_fa), _dev(s.mtwv.p_miss), "*", markersize=12, label="maximum TWV")
    ax.set_xticks([_dev(t) for t in ticks], [f"{100 * t:g}" for t in ticks])
    ax.set_yticks([_dev(t) for t in ticks], [f"{100 * t:g}" for t in ticks])
    ax.set_xlabel("False alarm probability (%)")
    ax.set_ylabel("Miss probability (%)")
    ax.set_title(title or "Keyword search DET curve")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    try:
        with atomic_write(path, "wb") as out:
            fig.savefig(out, format="png", dpi=100)
    finally:
        plt.close(fig)


__all__ = ["plot_det"]
