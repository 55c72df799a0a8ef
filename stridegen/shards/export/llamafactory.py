"""LLaMA-Factory exporter (``llamafactory``): the chat samples in LLaMA-Factory's sharegpt format, plus the
``dataset_info.json`` entry its data loader looks the dataset up by.

```
dataset_info.json           {"<name>": {file_name, formatting: "sharegpt", columns, tags}}
<name>.jsonl                one sample per line: {id, kind, conversations, images}
images/<scene>/<camera>/k<kf>_f<frame>.jpg   the Set-of-Mark renders (those of the llava export)
```

The samples and images are those of stridegen.shards.export.chat (the ``llava`` exporter's). LLaMA-Factory
(src/llamafactory/data/parser.py, converter.py) finds a local dataset by its name in ``dataset_info.json`` under
``dataset_dir``, loads ``file_name`` relative to that folder, reads the turns from the column ``columns.messages``
(role under ``tags.role_tag``, text under ``tags.content_tag``; human / gpt turns must alternate, starting with the
user) and the images from the column ``columns.images``, each path joined to ``media_dir`` (by default
``dataset_dir``). Its multimodal plugin requires as many ``<image>`` tokens in the messages as the sample has
images: the first human turn starts with one ``<image>\\n`` per image. So the export folder is the ``dataset_dir``
and ``--dataset <name>`` selects the data.

The structured truth (``qa_info``, ``meta``) stays in the ``llava`` / ``messages`` exports: the loader reads every
column of the file into one Arrow table, and a record kept to plain strings and lists always has one schema.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from stridegen.core.errors import ConfigError
from stridegen.shards.export.chat import ChatExporter, image_paths, sharegpt_turns
from stridegen.shards.writer import atomic_write_bytes

DATASET_INFO = "dataset_info.json"
NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")
# The dataset_info.json entry's mapping onto LLaMA-Factory's sharegpt reader (its DatasetAttr fields).
COLUMNS = {"messages": "conversations", "images": "images"}
TAGS = {"role_tag": "from", "content_tag": "value", "user_tag": "human", "assistant_tag": "gpt"}


class LlamaFactoryExporter(ChatExporter):
    """``<name>.jsonl`` of sharegpt records and ``dataset_info.json`` naming it (module docstring)."""

    name = "llamafactory"

    def __init__(self, jpeg_quality: int = 92, alpha: float = 0.4, dataset_name: str = "stridegen") -> None:
        super().__init__(jpeg_quality, alpha)
        if not NAME_RE.match(dataset_name):
            raise ConfigError(f"llamafactory exporter: dataset_name {dataset_name!r} (letters, digits, _ . -)")
        self.dataset_name = dataset_name
        self.file_name = f"{dataset_name}.jsonl"

    def sample_record(self, sample: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": sample["id"],
            "kind": sample["kind"],
            "conversations": sharegpt_turns(sample),
            "images": image_paths(sample),
        }

    def dataset_entry(self, file_name: str) -> dict[str, Any]:
        """The ``dataset_info.json`` entry of one data file: where it is, its formatting and its column and tag
        mapping (LLaMA-Factory's parser reads exactly these keys)."""
        return {"file_name": file_name, "formatting": "sharegpt", "columns": dict(COLUMNS), "tags": dict(TAGS)}

    def finalize(self, out_dir: Path, records: list[list[dict[str, Any]]], source: dict[str, Any]) -> list[str]:
        lines = [json.dumps(r, ensure_ascii=True) for scene in records for r in scene]
        atomic_write_bytes(out_dir / self.file_name, ("\n".join(lines) + "\n" if lines else "").encode())
        info = {self.dataset_name: self.dataset_entry(self.file_name)}
        atomic_write_bytes(out_dir / DATASET_INFO, json.dumps(info, indent=2).encode() + b"\n")
        return [self.file_name, DATASET_INFO]
