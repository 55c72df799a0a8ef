"""The ROS message type stores the reader and the writer use: rosbags' standard stores (``ROS1_NOETIC``,
``ROS2_HUMBLE``) plus the types they lack, registered from their message definitions' text.

rosbags (the ``ros`` extra) is imported lazily: ``require_rosbags`` raises MissingExtraError naming the extra.
A recording carries its own message definitions (ROS 1 connection headers, ROS 2 MCAP schemas; a ROS 2 sqlite3 bag
of version >= 8 too), so the reader decodes a company's own types without any registration; these stores serve
writing and recordings without definitions.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from stridegen.core.errors import require

# vision_msgs 4.x (ros-perception/vision_msgs, branch ros2, msg/*.msg): the ROS 2 Humble layout. The same text is
# registered in the ROS 1 store: a ROS 1 bag written by stridegen embeds it, so it reads back the same.
VISION_MSGS: dict[str, str] = {
    "vision_msgs/msg/ObjectHypothesis": "string class_id\nfloat64 score\n",
    "vision_msgs/msg/ObjectHypothesisWithPose": (
        "vision_msgs/ObjectHypothesis hypothesis\ngeometry_msgs/PoseWithCovariance pose\n"
    ),
    "vision_msgs/msg/BoundingBox3D": "geometry_msgs/Pose center\ngeometry_msgs/Vector3 size\n",
    "vision_msgs/msg/Detection3D": (
        "std_msgs/Header header\nvision_msgs/ObjectHypothesisWithPose[] results\nvision_msgs/BoundingBox3D bbox\n"
        "string id\n"
    ),
    "vision_msgs/msg/Detection3DArray": "std_msgs/Header header\nvision_msgs/Detection3D[] detections\n",
}
# tf2_msgs/TFMessage (ros/geometry2, tf2_msgs/msg/TFMessage.msg): in rosbags' ROS 2 stores, not in ROS1_NOETIC.
TF2_MSGS: dict[str, str] = {"tf2_msgs/msg/TFMessage": "geometry_msgs/TransformStamped[] transforms\n"}


def require_rosbags() -> Any:
    """The ``rosbags`` package, or MissingExtraError naming the ``ros`` extra."""
    return require("rosbags", "ros")


@cache
def typestore(ros1: bool) -> Any:
    """rosbags' ROS 1 Noetic or ROS 2 Humble store with the vision_msgs (and, for ROS 1, tf2_msgs) types added."""
    require_rosbags()
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS1_NOETIC if ros1 else Stores.ROS2_HUMBLE)
    extra = {**VISION_MSGS, **TF2_MSGS}
    types: dict[str, Any] = {}
    for name, text in extra.items():
        if name not in store.fielddefs:
            types.update(get_types_from_msg(text, name))
    store.register(types)
    return store


def make(store: Any, msgtype: str, **fields: Any) -> Any:
    """A message of ``msgtype`` built from ``fields``; ROS 1's ``seq`` of a header is filled with 0, and a field
    named in lower case is given under the store's spelling (ROS 1 ``CameraInfo`` has ``K``, ROS 2 ``k``)."""
    names = [f[0] for f in store.fielddefs[msgtype][1]]
    by_lower = {n.lower(): n for n in names}
    values = {by_lower.get(k.lower(), k): v for k, v in fields.items()}
    if "seq" in names and "seq" not in values:
        values["seq"] = 0
    return store.types[msgtype](**values)
