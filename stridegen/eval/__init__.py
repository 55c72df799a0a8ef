"""Evaluators: detection (nuScenes metrics), tracking, spatial QA and judge-based scoring."""
