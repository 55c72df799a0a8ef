"""Exporters: a built dataset's scenes (stridegen.shards.scene_view.SceneView) rewritten in another tool's format.

Each module is one format, an ``exporter`` backend of stridegen.core.registry with the interface of
``stridegen.shards.export.base.Exporter``: ``strideqa-bench`` (strideqa_bench.py), ``strideqa`` (strideqa.py),
``llava`` and ``messages`` (chat.py), ``llamafactory`` (llamafactory.py), ``hf`` (hf.py), ``answers``
(answers.py), ``lmms-eval`` (lmms.py). The export job that runs them scene by scene (parts, journal, resume,
``export.json``) is stridegen.jobs.export; docs/export.md describes the formats.
"""
