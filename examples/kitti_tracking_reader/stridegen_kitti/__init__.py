"""stridegen plugin: a ``log_reader`` for the KITTI tracking layout (docs/own-logs.md)."""

from stridegen_kitti.reader import KittiTrackingReader, open_kitti_tracking

__all__ = ["KittiTrackingReader", "open_kitti_tracking"]
