"""``stridegen report``: one self-contained HTML page of a built dataset and its evaluations (docs/report.md).

Modules, one job each: ``stats`` (one streaming pass over the tables), ``gallery`` (sampled Set-of-Mark images),
``results`` (evaluation JSON files), ``dataset_sections`` / ``gallery_view`` / ``eval_sections`` (HTML of each
section), ``svg`` (inline charts), ``markup`` (HTML helpers), ``assets`` (style and script), ``page`` (the
document) and ``build`` (``write_report``, the whole run).
"""

from stridegen.viz.report.build import DEFAULT_SAMPLES, ReportResult, write_report

__all__ = ["DEFAULT_SAMPLES", "ReportResult", "write_report"]
