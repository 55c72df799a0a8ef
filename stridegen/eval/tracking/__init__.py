"""nuScenes tracking evaluation, split as nuscenes-devkit's ``nuscenes/eval/tracking``: ``data`` (config, inputs,
result classes), ``algo`` (filtering, interpolation, association, per-threshold metrics), ``gt`` (ground truth from
a log) and ``evaluate`` (load, filter, run); the command ``stridegen eval tracking`` is
stridegen/cli/eval_tracking.py."""
