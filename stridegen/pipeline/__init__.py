"""The build pipeline's stages: keyframes, detection, tracking, attributes, segmentation, visibility, QA."""
