"""nuScenes detection evaluation, split as nuscenes-devkit's ``nuscenes/eval/detection``: ``data`` (config and
metric data classes), ``algo`` (matching, accumulation, AP / TP errors), ``gt`` (ground truth from a log and the
devkit's box filtering), ``evaluate`` (load, filter, run) and ``cli`` (``stridegen eval detection``)."""
