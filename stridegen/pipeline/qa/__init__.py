"""Template QA generators (spatial, spatiotemporal) and the scene-level QA stage."""
