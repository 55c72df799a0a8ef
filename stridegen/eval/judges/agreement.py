"""Agreement between a judge and human (or another judge's) scores.

- sample-level Pearson: per sample, Pearson r between the two raters' per-dimension scores, then the mean
  over samples (samples where either rater gives all dimensions the same score have no r and are skipped;
  their count is reported) -- IntelliCockpitBench / AlignBench "sample-level";
- system-level Pearson: Pearson r between the per-system mean scores;
- pairwise agreement without ties: over pairs of answers to the same question (``group``), the fraction of
  pairs on which both raters prefer the same answer, counting only pairs that neither rater scores as a tie
  (MT-Bench's "w/o tie" setup, IntelliCockpitBench table 1);
- Spearman rho and Kendall tau-b (scipy), Cohen's kappa (unweighted, linear or quadratic weights, our own
  implementation: Cohen 1960; weighted form Cohen 1968), percentile bootstrap confidence intervals over
  samples (Efron & Tibshirani 1993, ch. 13).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

FloatArray: TypeAlias = npt.NDArray[np.float64]
# One rater's values: a list of numbers or a 1-D float array.
Floats: TypeAlias = "Sequence[float] | npt.NDArray[np.floating[Any]]"
# One column that the bootstrap resamples by row: a list or a 1-D array of any dtype.
Column: TypeAlias = "Sequence[Any] | npt.NDArray[Any]"


def _finite_pair(a: Floats, b: Floats) -> tuple[FloatArray, FloatArray]:
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"expected two 1-D arrays of equal length, got {x.shape} and {y.shape}")
    keep = np.isfinite(x) & np.isfinite(y)
    return x[keep], y[keep]


def pearson(a: Floats, b: Floats) -> float:
    x, y = _finite_pair(a, b)
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    from scipy import stats

    return float(stats.pearsonr(x, y).statistic)


def spearman(a: Floats, b: Floats) -> float:
    x, y = _finite_pair(a, b)
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    from scipy import stats

    return float(stats.spearmanr(x, y).statistic)


def kendall(a: Floats, b: Floats) -> float:
    x, y = _finite_pair(a, b)
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    from scipy import stats

    return float(stats.kendalltau(x, y).statistic)  # tau-b


def per_sample_pearson(a_dims: Sequence[Floats], b_dims: Sequence[Floats]) -> FloatArray:
    """Pearson r across dimensions for each sample (NaN where undefined)."""
    return np.array([pearson(x, y) for x, y in zip(a_dims, b_dims, strict=True)], dtype=float)


def sample_level_pearson(a_dims: Sequence[Floats], b_dims: Sequence[Floats]) -> tuple[float, int]:
    """Mean over samples of the Pearson r across dimensions; returns (mean r, number of samples used)."""
    rs = per_sample_pearson(a_dims, b_dims)
    used = rs[np.isfinite(rs)]
    return (float(used.mean()) if len(used) else float("nan")), len(used)


def system_level_pearson(a: Floats, b: Floats, systems: Sequence[str]) -> float:
    """Pearson r between per-system mean scores of the two raters."""
    names = sorted(set(systems))
    sys_arr = np.asarray(systems)
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ma = [float(np.mean(x[sys_arr == s])) for s in names]
    mb = [float(np.mean(y[sys_arr == s])) for s in names]
    return pearson(ma, mb)


def pairwise_agreement(
    a: Floats, b: Floats, groups: Sequence[str] | None = None, tie_eps: float = 0.0
) -> tuple[float, int]:
    """Agreement on preferences over pairs within each group, ties of either rater excluded.

    Returns (fraction agreeing, number of counted pairs). Without groups all pairs are compared.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    g = np.zeros(len(x), dtype=int) if groups is None else np.unique(np.asarray(groups), return_inverse=True)[1]
    agree = counted = 0
    for label in np.unique(g):
        idx = np.flatnonzero(g == label)
        iu, ju = np.triu_indices(len(idx), k=1)
        dx, dy = x[idx][iu] - x[idx][ju], y[idx][iu] - y[idx][ju]
        keep = (np.abs(dx) > tie_eps) & (np.abs(dy) > tie_eps)
        counted += int(keep.sum())
        agree += int((np.sign(dx[keep]) == np.sign(dy[keep])).sum())
    return (agree / counted if counted else float("nan")), counted


def cohen_kappa(
    a: Sequence[Any], b: Sequence[Any], weights: str | None = None, labels: Sequence[Any] | None = None
) -> float:
    """Cohen's kappa between two raters' labels.

    kappa = 1 - sum(W * O) / sum(W * E), with O the observed joint proportions, E the product of marginals and
    W the disagreement weights: 0/1 (unweighted), |i - j| (linear) or (i - j)^2 (quadratic) over the sorted
    label order. Equals (p_o - p_e) / (1 - p_e) when unweighted.
    """
    if len(a) != len(b) or len(a) == 0:
        raise ValueError("two non-empty label sequences of equal length are needed")
    cats = sorted(set(a) | set(b)) if labels is None else list(labels)
    index = {c: i for i, c in enumerate(cats)}
    k = len(cats)
    observed = np.zeros((k, k))
    for u, v in zip(a, b, strict=True):
        observed[index[u], index[v]] += 1
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    i, j = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
    if weights is None:
        w = (i != j).astype(float)
    elif weights == "linear":
        w = np.abs(i - j).astype(float)
    elif weights == "quadratic":
        w = ((i - j) ** 2).astype(float)
    else:
        raise ValueError(f"unknown kappa weights '{weights}'")
    denom = float((w * expected).sum())
    if denom == 0:
        return float("nan")  # both raters used one and the same label: kappa undefined
    return 1.0 - float((w * observed).sum()) / denom


def bootstrap_ci(
    statistic: Callable[..., float], arrays: Sequence[Column], n_boot: int = 1000, alpha: float = 0.05, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic(*arrays)``, resampling samples (rows) jointly.

    Replicates where the statistic is undefined (NaN) are dropped. Returns (low, high), NaN if none.
    """
    rng = np.random.default_rng(seed)
    cols = [np.asarray(a, dtype=object) for a in arrays]
    n = len(cols[0])
    values = []
    for _ in range(n_boot):
        idx = rng.integers(0, n, size=n)
        v = statistic(*[c[idx] for c in cols])
        if np.isfinite(v):
            values.append(v)
    if not values:
        return float("nan"), float("nan")
    lo, hi = np.quantile(values, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


# Score scales. A judge's scale comes from its method (verdicts.jsonl names it; the method's ``scale``,
# stridegen.eval.judges.methods.method_scale); a file without one, and the human file, are classified by their
# values (infer_scale).
SCALE_NAMES = {"binary": "binary (0/1)", "pairwise": "pairwise (0 / 0.5 / 1)", "1-10": "1-10"}

# Why a metric has no value (its entry is null with this reason).
_UNDEFINED = {
    "pearson": "undefined: fewer than 2 items, or a rater gives every item the same score",
    "spearman": "undefined: fewer than 2 items, or a rater gives every item the same score",
    "kendall_tau_b": "undefined: fewer than 2 items, or a rater gives every item the same score",
    "cohen_kappa": "undefined: both raters used one and the same label",
    "cohen_kappa_quadratic": "undefined: both raters used one and the same label",
    "pairwise_agreement_wo_tie": "undefined: no pair of answers in a group that both raters score differently",
    "system_pearson": "undefined: a rater gives every system the same mean score",
    "sample_pearson": "undefined: no item where both raters give differing dimension scores",
}


def infer_scale(values: Floats) -> str:
    """``binary`` (all 0/1), ``pairwise`` (all 0 / 0.5 / 1), ``1-10`` (all within [1, 10]), else
    ``other (min to max)``."""
    v = np.asarray(values, dtype=float)
    if len(v) == 0:
        return "other (empty)"
    seen = set(v.tolist())
    if seen <= {0.0, 1.0}:
        return "binary"
    if seen <= {0.0, 0.5, 1.0}:
        return "pairwise"
    if bool(np.all((v >= 1) & (v <= 10))):
        return "1-10"
    return f"other ({v.min():g} to {v.max():g})"


def scales_compatible(judge: str, human: str) -> bool:
    """Same scale; or pairwise judge scores against human preferences that have no tie (0/1)."""
    return judge == human or (judge == "pairwise" and human == "binary")


def describe_scale(scale: str) -> str:
    return SCALE_NAMES.get(scale, scale)


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def agreement_report(
    a: Floats,
    b: Floats,
    systems: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    a_dims: Sequence[Floats] | None = None,
    b_dims: Sequence[Floats] | None = None,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
    categorical: bool = False,
) -> dict[str, dict[str, Any]]:
    """All agreement metrics with bootstrap intervals: {metric: {"value", "low", "high", "n"}}.

    Strict JSON: an undefined value or interval is ``None`` with ``reason`` / ``ci_reason`` saying why, never
    NaN. Kappa compares integer-rounded scores, or with ``categorical`` the scores themselves as labels
    (binary and pairwise scales: 0.5 is a tie, not rounded to 0 or 1).
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n = len(x)
    report: dict[str, dict[str, Any]] = {}

    def add(name: str, fn: Callable[..., float], arrays: list[Column], count: int) -> None:
        value = fn(*arrays)
        lo, hi = bootstrap_ci(fn, arrays, n_boot, alpha, seed) if n_boot > 0 else (float("nan"),) * 2
        entry: dict[str, Any] = {"value": _finite(value), "low": _finite(lo), "high": _finite(hi), "n": count}
        if entry["value"] is None:
            entry["reason"] = _UNDEFINED[name]
        if entry["low"] is None or entry["high"] is None:
            entry["low"] = entry["high"] = None
            entry["ci_reason"] = "n_boot is 0" if n_boot <= 0 else "no bootstrap replicate where it is defined"
        report[name] = entry

    def as_float(*cols: Column) -> list[FloatArray]:
        return [np.asarray(c, dtype=float) for c in cols]

    add("pearson", lambda u, v: pearson(*as_float(u, v)), [x, y], n)
    add("spearman", lambda u, v: spearman(*as_float(u, v)), [x, y], n)
    add("kendall_tau_b", lambda u, v: kendall(*as_float(u, v)), [x, y], n)
    if categorical:
        rx, ry = x, y
    else:
        rx, ry = np.rint(x).astype(int), np.rint(y).astype(int)
    add("cohen_kappa", lambda u, v: cohen_kappa(list(u), list(v)), [rx, ry], n)
    add("cohen_kappa_quadratic", lambda u, v: cohen_kappa(list(u), list(v), "quadratic"), [rx, ry], n)
    if groups is not None:
        value, counted = pairwise_agreement(x, y, groups)

        def pw(u: Any, v: Any, g: Any) -> float:
            return pairwise_agreement(np.asarray(u, float), np.asarray(v, float), list(g))[0]

        add("pairwise_agreement_wo_tie", pw, [x, y, list(groups)], counted)
        report["pairwise_agreement_wo_tie"]["value"] = _finite(value)
    if systems is not None and len(set(systems)) >= 3:
        add(
            "system_pearson",
            lambda u, v, s: system_level_pearson(np.asarray(u, float), np.asarray(v, float), list(s)),
            [x, y, list(systems)],
            len(set(systems)),
        )
    if a_dims is not None and b_dims is not None:
        rs = per_sample_pearson(a_dims, b_dims)  # computed once; the bootstrap resamples samples' r values

        def mean_r(r: Any) -> float:
            r = np.asarray(r, dtype=float)
            r = r[np.isfinite(r)]
            return float(r.mean()) if len(r) else float("nan")

        add("sample_pearson", mean_r, [rs], int(np.isfinite(rs).sum()))
    return report
