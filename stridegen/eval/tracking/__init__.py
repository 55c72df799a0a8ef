"""nuScenes tracking evaluation, split as nuscenes-devkit's ``nuscenes/eval/tracking``: ``data`` (config, inputs,
result classes), ``algo`` (filtering, interpolation, association, per-threshold metrics), ``gt`` (ground truth from
a log), ``evaluate`` (load, filter, run) and ``cli`` (``stridegen eval tracking``)."""
