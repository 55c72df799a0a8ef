"""Dataset storage: HDF5 shards (one per scene), manifest.json, the resume journal, and the reader.

See docs/format.md for the on-disk layout (schema v3) and what the reader checks on every read (Integrity).
"""

from stridegen.shards.reader import Dataset, UncheckedShardWarning, open_dataset
from stridegen.shards.scene_view import SceneView
from stridegen.shards.schema import SCHEMA_VERSION, SceneMeta, SceneRecord, ShardError

__all__ = [
    "SCHEMA_VERSION",
    "Dataset",
    "SceneMeta",
    "SceneRecord",
    "SceneView",
    "ShardError",
    "UncheckedShardWarning",
    "open_dataset",
]
