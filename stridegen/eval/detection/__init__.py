"""nuScenes detection evaluation, split as nuscenes-devkit's ``nuscenes/eval/detection``: ``data`` (config and
metric data classes), ``algo`` (matching, accumulation, AP / TP errors), ``gt`` (ground truth from a log and the
devkit's box filtering) and ``evaluate`` (load, filter, run); the command ``stridegen eval detection`` is
stridegen/cli/eval_detection.py."""
