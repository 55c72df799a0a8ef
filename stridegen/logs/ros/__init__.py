"""ROS recordings (ROS 1 ``.bag`` files, ROS 2 bag folders with sqlite3 or MCAP storage, bare ``.mcap`` files) as
a stridegen log: ``log.format=ros`` (docs/ros.md)."""

from stridegen.logs.ros.reader import RosReader, open_ros

__all__ = ["RosReader", "open_ros"]
