"""Dataset storage: HDF5 shards (one per scene), manifest.json, the resume journal, and the reader.

See docs/format.md for the on-disk layout (schema v2).
"""

from stridegen.shards.reader import Dataset, SceneView, open_dataset
from stridegen.shards.schema import SCHEMA_VERSION, SceneMeta, SceneRecord, ShardError

__all__ = ["SCHEMA_VERSION", "Dataset", "SceneMeta", "SceneRecord", "SceneView", "ShardError", "open_dataset"]
