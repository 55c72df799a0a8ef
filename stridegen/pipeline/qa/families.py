"""The built-in QA families (``qa_family`` backends of stridegen.core.registry): spatial and spatiotemporal.

A family turns one keyframe image (``QAImage``) into QA items with the scene's shared generator; the QA stage runs
the configured families in order (``stridegen.pipeline.qa.stage.qa_families``).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from stridegen.pipeline.qa.base import QAItem
from stridegen.pipeline.qa.spatial import generate_spatial_qa, spatial_scene_generator
from stridegen.pipeline.qa.spatial_predicates import EGO_SPATIAL_PREDICATES, OBJECT_SPATIAL_PREDICATES, SpatialQAConfig
from stridegen.pipeline.qa.spatiotemporal import spatiotemporal_scene_generator
from stridegen.pipeline.qa.spatiotemporal_inputs import TemporalQAConfig, TemporalTargets
from stridegen.pipeline.qa.stage import QAImage, SceneGenerate


class SpatialFamily:
    """Object-centric and ego-centric spatial QA (docs/qa-spatial.md). Switching one side off drops its
    predicates, so the per-image cap goes to the other side."""

    name = "spatial"

    def __init__(
        self, config: SpatialQAConfig | None = None, object_centric: bool = True, ego_centric: bool = True
    ) -> None:
        config = config or SpatialQAConfig()
        dropped = (set() if object_centric else set(OBJECT_SPATIAL_PREDICATES)) | (
            set() if ego_centric else set(EGO_SPATIAL_PREDICATES)
        )
        self.predicates = frozenset(config.predicates) - dropped
        self.config = dataclasses.replace(config, predicates=self.predicates) if self.predicates and dropped else config

    def generate(self, image: QAImage, rng: np.random.Generator) -> tuple[list[QAItem], dict[str, int]]:
        return generate_spatial_qa(image.ctx, rng, self.config), {}

    def for_scene(self, images: list[QAImage]) -> SceneGenerate:
        """``generate`` of each image by position, the geometry of all images computed in one pass."""
        generate = spatial_scene_generator([image.ctx for image in images], self.config)
        return lambda i, rng: (generate(i, rng), {})


def _targets(image: QAImage) -> TemporalTargets:
    """The image's regions as spatiotemporal targets, with its camera."""
    ctx = image.ctx
    return TemporalTargets(
        scene=image.scene,
        keyframe_index=image.keyframe_index,
        channel=image.channel,
        region_id=ctx.region_id,
        track_index=ctx.track_index,
        object_class=ctx.object_class,
        T_ego_from_cam=image.T_ego_from_cam,
        intrinsic=image.intrinsic,
        width=image.width,
        height=image.height,
    )


class SpatiotemporalFamily:
    """STRIDE-QA-Bench spatiotemporal groups of each visible target (docs/qa-spatiotemporal.md)."""

    name = "spatiotemporal"

    def __init__(self, config: TemporalQAConfig | None = None) -> None:
        self.config = config or TemporalQAConfig()

    def generate(self, image: QAImage, rng: np.random.Generator) -> tuple[list[QAItem], dict[str, int]]:
        return self.for_scene([image])(0, rng)

    def for_scene(self, images: list[QAImage]) -> SceneGenerate:
        """``generate`` of each image by position; frames and checks computed once per keyframe. The images are
        of one scene: they share its attributes and frame times."""
        if not images:
            return lambda i, rng: ([], {})
        targets = [
            (
                image.keyframe_frame,
                TemporalTargets.from_context(
                    image.ctx, image.T_ego_from_cam, image.intrinsic, image.width, image.height
                ),
            )
            for image in images
        ]
        return spatiotemporal_scene_generator(images[0].attrs, images[0].times_s, targets, self.config)
