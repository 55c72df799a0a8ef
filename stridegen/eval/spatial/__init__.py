"""Rule-based scoring of spatial QA (object-centric and ego-centric): ``data`` (items read from a dataset's QA rows),
``parse`` (answers read with stridegen's answer grammar), ``algo`` (tolerance bands, aggregation), ``evaluate``
(the metrics dict of a dataset and a predictions file) and ``report`` (the files written). docs/metrics-spatial.md."""
